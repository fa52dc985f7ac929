//! The `mongotape` command line: parses arguments and calls into the library.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
