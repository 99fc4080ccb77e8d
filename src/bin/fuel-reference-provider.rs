//! The reference backend served over the provider protocol (mdbook-fkc itself runs it in
//! process; this binary lets any host, or a test, reach it the way it reaches other providers).

fn main() -> std::process::ExitCode {
    fkc_provider::serve(&fuel_reference_backend::fkc::REGISTRY)
}
