//! The same binary under the compatibility name `agent-compose`.

fn main() -> std::process::ExitCode {
    acompose_cli::main()
}
