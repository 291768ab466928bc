//! Test prerequisites as cfgs (see scripts/test_prereqs.rs).

include!("../scripts/test_prereqs.rs");

fn main() {
    probe_test_prerequisites();
}
