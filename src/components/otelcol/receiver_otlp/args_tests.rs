use super::*;
use crate::syntax::decode::from_body;
use crate::syntax::eval::{Scope, eval_body};
use crate::syntax::parser::parse_file;

fn decode(src: &str) -> Result<Arguments, String> {
    let (file, diags) = parse_file(src);
    assert!(diags.is_empty(), "{diags:?}");
    let body = eval_body(&file.body, &Scope::stdlib()).expect("evaluates");
    let args = from_body::<Arguments>(&body).map_err(|d| {
        d.iter()
            .map(|d| d.message.clone())
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    match args.problems.first() {
        Some(p) => Err(p.to_string()),
        None => Ok(args),
    }
}

#[test]
fn empty_blocks_serve_on_alloys_default_endpoints() {
    let a = decode("grpc {}\nhttp {}\noutput {}").expect("decodes");
    let grpc = a.grpc.expect("grpc");
    assert_eq!(grpc.endpoint, "0.0.0.0:4317");
    assert_eq!(grpc.max_size, 4 << 20);
    assert_eq!(grpc.max_concurrent_streams, DEFAULT_MAX_CONCURRENT_STREAMS);
    let http = a.http.expect("http");
    assert_eq!(http.endpoint, "0.0.0.0:4318");
    assert_eq!(http.path, "/v1development/profiles");
    assert_eq!(http.max_size, 20 << 20);
    assert_eq!(http.read_timeout, DEFAULT_READ_TIMEOUT);
    assert!(a.profiles.is_empty());
    assert!(a.ignored.is_empty());

    let a = decode("http {\n endpoint = \":9999\"\n}\noutput {}").expect("decodes");
    assert!(a.grpc.is_none(), "no block, no gRPC server");
    assert_eq!(a.http.expect("http").bind_address(), "0.0.0.0:9999");
}

#[test]
fn alloys_settings_are_accepted_and_the_unused_ones_listed() {
    let src = r#"
grpc {
  endpoint = "127.0.0.1:0"
  transport = "tcp"
  include_metadata = true
  max_recv_msg_size = "8MiB"
  read_buffer_size = "512KiB"
  write_buffer_size = "32KiB"
  keepalive {
    server_parameters {
      max_connection_idle = "1m"
    }
  }
}
http {
  endpoint = "[::1]:0"
  max_request_body_size = "1MiB"
  cors {
    allowed_origins = ["*"]
  }
  traces_url_path = "/v1/traces"
  read_timeout = "5s"
}
debug_metrics {
  disable_high_cardinality_metrics = true
}
output {
  metrics = []
  traces = []
}
"#;
    let a = decode(src).expect("decodes");
    assert_eq!(a.grpc.as_ref().map(|g| g.max_size), Some(8 << 20));
    assert_eq!(a.http.as_ref().map(|h| h.max_size), Some(1 << 20));
    assert_eq!(
        a.http.as_ref().map(|h| h.read_timeout),
        Some(StdDuration::from_secs(5))
    );
    assert_eq!(
        a.ignored,
        [
            "grpc > keepalive",
            "grpc > read_buffer_size",
            "grpc > write_buffer_size",
            "grpc > include_metadata",
            "http > cors",
            "http > traces_url_path",
            "output > metrics",
            "output > traces",
            "debug_metrics",
        ]
    );
}

#[test]
fn bad_arguments() {
    let cases = [
        ("output {}", "must specify at least one protocol"),
        ("grpc {}", "output"),
        (
            "grpc {\n tls {\n  cert_file = \"/c\"\n }\n}\noutput {}",
            "grpc > tls: TLS is not supported",
        ),
        (
            "grpc {\n transport = \"unix\"\n}\noutput {}",
            "only \"tcp\" is supported",
        ),
        (
            "grpc {\n endpoint = \"4317\"\n}\noutput {}",
            "must be host:port",
        ),
        (
            "http {\n endpoint = \"::1:4318\"\n}\noutput {}",
            "in brackets",
        ),
        ("http {\n endpoint = \"a:b\"\n}\noutput {}", "invalid port"),
        (
            "http {\n max_request_body_size = \"lots\"\n}\noutput {}",
            "http > max_request_body_size: invalid size",
        ),
        (
            "http {\n profiles_url_path = \"v1\"\n}\noutput {}",
            "must start with",
        ),
        ("http {\n bogus = 1\n}\noutput {}", "bogus"),
    ];
    for (src, want) in cases {
        let err = decode(src).expect_err(src);
        assert!(err.contains(want), "{src}: {err}");
    }
}
