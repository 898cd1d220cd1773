//! The `acompose` binary.

fn main() -> std::process::ExitCode {
    acompose_cli::main()
}
