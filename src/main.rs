//! The `mongotape` command line: parses arguments and calls into the library.

#![forbid(unsafe_code)]

mod cli;

/// mimalloc, not glibc's malloc: see Cargo.toml.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cli::main()
}
