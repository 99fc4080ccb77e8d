//! A test fixture: kernels whose contracts lie (see `demo_provider::lying`).

fn main() -> std::process::ExitCode {
    fkc_provider::serve(&demo_provider::lying::REGISTRY)
}
