//! A test fixture: kernels that panic, abort, overflow the stack, exit or hang (see
//! `demo_provider::crashing`).

fn main() -> std::process::ExitCode {
    fkc_provider::serve(&demo_provider::crashing::REGISTRY)
}
