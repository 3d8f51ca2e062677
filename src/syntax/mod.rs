//! The Alloy configuration language: lexer, parser, formatter, values, evaluation and decoding
//! into component arguments. Nothing in here knows about components or the runtime.

pub mod ast;
pub mod decode;
pub mod diag;
pub mod eval;
pub mod lexer;
pub mod parser;
pub mod printer;
pub mod stdlib;
pub mod suggest;
pub mod types;
pub mod value;
