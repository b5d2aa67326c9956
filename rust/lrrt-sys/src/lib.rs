//! Raw bindings to lrrt's C ABI, `include/lrrt/lrrt.h`, as bindgen 0.60
//! generates them (`regenerate`; `tests/bindings_fresh.rs` fails when they
//! differ from the header). Every function is `unsafe`: the safe API is the
//! `lrrt` crate. See docs/rust.md.
#![allow(non_camel_case_types, non_upper_case_globals, non_snake_case, deref_nullptr)]
#![allow(clippy::all)]

include!("bindings.rs");
