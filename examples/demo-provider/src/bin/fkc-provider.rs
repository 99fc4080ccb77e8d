//! The demo provider's `fkc-provider` binary: the whole protocol in one line.

fn main() -> std::process::ExitCode {
    fkc_provider::serve(&demo_provider::REGISTRY)
}
