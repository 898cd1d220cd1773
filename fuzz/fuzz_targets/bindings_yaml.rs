//! Fuzzes `people/bindings.yaml`: the strict YAML reader, the bindings check and the host
//! configuration, which shares the reader.
#![no_main]

use std::collections::BTreeSet;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = acompose_people::yaml::parse(data);
    let present: BTreeSet<String> = ["ada".to_owned()].into_iter().collect();
    let _ = acompose_people::workspace::check_bindings(data, &present);
    let _ = acompose_engine::host_config::parse_host_config(&String::from_utf8_lossy(data), "config.yaml");
});
