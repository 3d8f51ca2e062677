use super::*;

#[test]
fn only_grpc_with_protobuf_is_accepted() {
    for (content_type, ok) in [
        ("application/grpc", true),
        ("application/grpc+proto", true),
        ("application/grpc; charset=utf-8", true),
        ("Application/GRPC+proto ;x=y", true),
        ("application/grpc+json", false),
        ("application/grpc-web", false),
        ("application/grpc-web+proto", false),
        ("application/grpcx", false),
        ("application/x-protobuf", false),
        ("", false),
    ] {
        assert_eq!(is_grpc_proto(content_type), ok, "{content_type:?}");
    }
}

#[test]
fn grpc_timeouts_are_parsed_as_the_spec_writes_them() {
    for (value, want) in [
        ("1H", Some(Duration::from_secs(3600))),
        ("2M", Some(Duration::from_secs(120))),
        ("30S", Some(Duration::from_secs(30))),
        ("1500m", Some(Duration::from_millis(1500))),
        ("7u", Some(Duration::from_micros(7))),
        ("99999999n", Some(Duration::from_nanos(99_999_999))),
        ("123456789m", None),
        ("10", None),
        ("S", None),
        ("-1S", None),
        ("5s", None),
    ] {
        let mut h = HeaderMap::new();
        h.insert("grpc-timeout", HeaderValue::from_static(value));
        assert_eq!(grpc_timeout(&h), want, "{value}");
    }
    assert_eq!(grpc_timeout(&HeaderMap::new()), None);
}

#[test]
fn the_body_bound_is_the_declared_length_within_the_limit() {
    for (declared, want) in [
        (None, Ok(100)),
        (Some("40"), Ok(40)),
        (Some("100"), Ok(100)),
        (Some("101"), Err("exceeds the 100-byte limit")),
        (Some("junk"), Ok(100)),
    ] {
        let mut h = HeaderMap::new();
        if let Some(v) = declared {
            h.insert(header::CONTENT_LENGTH, HeaderValue::from_static(v));
        }
        match (body_bound(&h, 100), want) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "{declared:?}"),
            (Err(Failure::TooLarge(m)), Err(want)) => assert!(m.contains(want), "{m}"),
            (got, want) => panic!("{declared:?}: {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn a_payload_declared_gzip_must_be_gzip() {
    let plain = Bytes::from_static(b"\x0a\x00 plain protobuf");
    assert!(matches!(gunzip(&plain, 1 << 20), Err(Failure::Invalid(m)) if m.contains("not gzip")));
    assert!(matches!(
        gunzip(&Bytes::new(), 1 << 20),
        Err(Failure::Invalid(_))
    ));
    let gz = Bytes::from(crate::pprof::gzip(b"hello", 6));
    assert_eq!(
        gunzip(&gz, 1 << 20).ok(),
        Some(Bytes::from_static(b"hello"))
    );
    let big = Bytes::from(crate::pprof::gzip(&[0u8; 4096], 6));
    assert!(matches!(gunzip(&big, 100), Err(Failure::TooLarge(_))));
}

#[test]
fn only_budget_refusals_tell_clients_to_retry() {
    // (failure, gRPC status, RetryInfo delay, HTTP status, Retry-After)
    let cases = [
        (
            Failure::Exhausted("full".into()),
            "8",
            Some(RETRY_DELAY),
            429,
            Some("1"),
        ),
        (Failure::TooLarge("big".into()), "8", None, 413, None),
        (Failure::Invalid("bad".into()), "3", None, 400, None),
        (Failure::Unsupported("enc".into()), "12", None, 415, None),
        (Failure::Internal("oops".into()), "13", None, 500, None),
    ];
    for (f, status, delay, http, retry_after) in cases {
        let r = grpc_failure(&f);
        let h = r.headers();
        assert_eq!(h["grpc-status"], status, "{f:?}");
        assert_eq!(h["grpc-accept-encoding"], "gzip");
        let details = h
            .get(grpc::STATUS_DETAILS_HEADER)
            .and_then(|v| v.to_str().ok());
        assert_eq!(details.and_then(grpc::retry_delay), delay, "{f:?}");
        let r = http_error(&f);
        assert_eq!(r.status().as_u16(), http, "{f:?}");
        let got = r
            .headers()
            .get(header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok());
        assert_eq!(got, retry_after, "{f:?}");
    }
}
