//! Fuzzes the bundle readers: `manifest.json` and `trace.json` as `describe`, `--why`,
//! `diff` and `verify` read them. The input is split at the first `\0` into a manifest and
//! a trace.
#![no_main]

use std::collections::BTreeMap;

use acompose_engine::bundle::{Manifest, read_bundle_json};
use acompose_engine::render::Palette;
use acompose_engine::trace::Trace;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (manifest_bytes, trace_bytes) = match data.iter().position(|byte| *byte == 0) {
        Some(split) => (&data[..split], &data[split + 1..]),
        None => (data, data),
    };
    let mut files = BTreeMap::new();
    files.insert("manifest.json".to_owned(), manifest_bytes.to_vec());
    files.insert("trace.json".to_owned(), trace_bytes.to_vec());
    let _ = acompose_engine::bundle::verify("0123456789abcdef", &files);
    let manifest = read_bundle_json::<Manifest>("manifest.json", manifest_bytes, "manifest.json");
    let trace = read_bundle_json::<Trace>("trace.json", trace_bytes, "trace.json");
    if let (Ok(manifest), Ok(trace)) = (manifest, trace) {
        let _ = acompose_engine::describe::describe_text("id", &manifest, &trace, true, Palette::Plain);
        let _ = acompose_engine::describe::describe_json("id", &manifest, &trace);
        let _ = acompose_engine::describe::why(&trace, "skill:x");
        let _ = acompose_engine::describe::diff((&manifest, &trace), (&manifest, &trace));
    }
});
