//! Fuzzes People JSON: the hardened JSON reader and the person@1 check of one file.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = acompose_people::json::parse(data);
    let _ = acompose_people::workspace::check_person("people", "ada.json", data);
});
