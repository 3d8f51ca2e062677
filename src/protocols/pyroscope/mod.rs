//! Pyroscope's protocols: the generated `push.v1`/`types.v1` messages (`proto`), the Connect
//! wire format of `push.v1.PusherService/Push` and the querier (`wire`: hand-encoded requests,
//! response classification), and the label rules every series must satisfy (`labels`).

pub mod labels;
pub mod proto;
pub mod wire;
