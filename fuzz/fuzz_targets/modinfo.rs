//! The ELF `.modinfo` reader: any bytes parse or fail cleanly.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(info) = verify::modinfo::parse(data) {
        let _ = info.kernel();
        let _ = info.depends();
    }
});
