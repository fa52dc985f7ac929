//! The `mongotape` command line: parses arguments and calls into the library.

#![forbid(unsafe_code)]

mod cli;

/// See `Cargo.toml`: requests allocated on one thread and freed on others, without a lock.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cli::main()
}
