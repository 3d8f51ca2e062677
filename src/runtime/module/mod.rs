//! Alloy modules: custom components (`declare` with `argument` and `export`) and the
//! `import.file`, `import.string` and `import.http` blocks that bring definitions in from
//! elsewhere.
//!
//! A custom component instance is expanded by the loader into the blocks of its definition,
//! with IDs prefixed by the instance's (`profiling.feature/pyroscope.ebpf.default`). Each
//! instance is a resolution scope of its own, as each Alloy module is a controller of its own:
//! its blocks see its arguments, its components, and the definitions visible where it was
//! declared (a local `declare` sees the definitions around it; a definition read from an import
//! sees only its own file's). Arguments and exports are graph nodes too, so that a change of
//! an argument re-evaluates only the blocks inside that use it, and a changed export only the
//! blocks outside that use it.
//!
//! `defs`: the definitions visible at each level; `instance`: instantiation, arguments and
//! exports; `imports`: reading modules from files, strings and URLs, and what to watch for
//! changes; `lastgood`: the content last read from each import, used when it cannot be read
//! again; `fetch`: the HTTP GET of `import.http`; `watch`: re-reading imported files and
//! URLs, applying the config again when one changed.

pub(crate) mod defs;
pub(crate) mod fetch;
pub(crate) mod imports;
pub(crate) mod instance;
pub(crate) mod lastgood;
pub(crate) mod watch;
