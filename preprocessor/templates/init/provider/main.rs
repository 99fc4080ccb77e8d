//! The `fkc-provider` binary: serves this crate's link registry to mdbook-fkc.

fn main() -> std::process::ExitCode {
    fkc_provider::serve(&{{crate}}::REGISTRY)
}
