//! Fuzzes `request.kdl` and the source declaration files a request names. Does not fuzz
//! resolution (that needs catalogues).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = acompose_engine::request::parse_request(&text, "request.kdl");
    let _ = acompose_engine::request::parse_declaration(&text, "source.kdl", "s");
});
