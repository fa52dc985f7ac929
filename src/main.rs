//! The `mongotape` command line: parses arguments and calls into the library.

#![forbid(unsafe_code)]

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
