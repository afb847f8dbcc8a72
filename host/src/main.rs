//! The `capstan` binary; everything lives in the library's `cli` module.

fn main() -> std::process::ExitCode {
    capstan::cli::main()
}
