//! The `pyroscope.store` engine through its public API: round trips, marks, retention,
//! read-only access while a writer holds the store, and what opening refuses.

mod store_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use scraper::store::{Db, Mode, RedbCheck, StoreError, size_budget};
use store_support::{gunzip, label, labels, pprof, profile, t0};

const STEP: Duration = Duration::from_secs(15);

fn everything(_: &[(String, String)]) -> bool {
    true
}

/// Every profile of `db` as (service, name, time, stored bytes).
fn dump(db: &Db) -> Vec<(String, String, SystemTime, Vec<u8>)> {
    let mut out = Vec::new();
    db.select(
        &everything,
        SystemTime::UNIX_EPOCH,
        SystemTime::UNIX_EPOCH + Duration::from_secs(1 << 40),
        &mut |s, at, bytes| {
            out.push((
                s.label("service_name").unwrap_or("").to_string(),
                s.label("__name__").unwrap_or("").to_string(),
                at,
                bytes.to_vec(),
            ));
            Ok(())
        },
    )
    .expect("select");
    out
}

#[test]
fn round_trip_by_labels_and_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path()).expect("open");
    assert_eq!(db.mode(), Mode::ReadWrite);
    let services = ["checkout", "cart", "search"];
    let names = ["process_cpu", "memory"];
    let mut sent = Vec::new();
    for k in 0..20u32 {
        let at = t0() + STEP * k;
        let mut batch = Vec::new();
        for (si, service) in services.iter().enumerate() {
            for (ni, name) in names.iter().enumerate() {
                // Sizes from one chunk to several: 40 to 1390 functions.
                let seed = u64::from(k) * 100 + (si * 10 + ni) as u64;
                let raw = pprof(seed, 40 + (seed as usize % 10) * 150, 200);
                sent.push((service.to_string(), name.to_string(), at, raw.clone()));
                batch.push(profile(labels(service, "10.0.0.1:6060", name), raw, at));
            }
        }
        let appended = db.append(&batch).expect("append");
        assert_eq!(appended.profiles, 6);
        assert_eq!(appended.new_series, if k == 0 { 6 } else { 0 });
    }
    assert!(
        sent.iter().any(|s| s.3.len() > 3 * 4068),
        "some profiles span several chunks"
    );

    let series = db.series().expect("series");
    assert_eq!(series.len(), 6);
    let first = &series[0].labels;
    let names_only: Vec<&str> = first.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names_only,
        ["__delta__", "__name__", "instance", "service_name"],
        "private and empty labels dropped, sorted: {first:?}"
    );

    // One series, a time window: [5, 10) steps.
    let cart_cpu = |l: &[(String, String)]| {
        label(l, "service_name") == Some("cart") && label(l, "__name__") == Some("process_cpu")
    };
    let (from, to) = (t0() + STEP * 5, t0() + STEP * 10);
    let mut got = Vec::new();
    let n = db
        .select(&cart_cpu, from, to, &mut |s, at, bytes| {
            assert_eq!(s.label("service_name"), Some("cart"));
            got.push((at, bytes.to_vec()));
            Ok(())
        })
        .expect("select");
    assert_eq!(n, 5);
    assert_eq!(db.count(&cart_cpu, from, to).expect("count"), 5);
    let want: Vec<(SystemTime, Vec<u8>)> = sent
        .iter()
        .filter(|(s, n, at, _)| s == "cart" && n == "process_cpu" && *at >= from && *at < to)
        .map(|(_, _, at, b)| (*at, b.clone()))
        .collect();
    assert_eq!(got, want, "time order, bytes as sent");

    // Everything, across series.
    let all = dump(&db);
    assert_eq!(all.len(), sent.len());
    let mut sorted_sent = sent.clone();
    let mut sorted_all = all.clone();
    sorted_sent.sort();
    sorted_all.sort();
    assert_eq!(sorted_all, sorted_sent);
    assert_eq!(
        db.count(&everything, t0(), t0() + STEP * 20)
            .expect("count"),
        120
    );
    assert_eq!(
        db.count(&|_| false, t0(), t0() + STEP * 20).expect("count"),
        0
    );
    assert_eq!(db.count(&everything, to, from).expect("empty range"), 0);

    let stats = db.stats().expect("stats");
    assert_eq!((stats.series, stats.profiles), (6, 120));
    assert_eq!(
        stats.bytes,
        sent.iter().map(|s| s.3.len() as u64).sum::<u64>()
    );
    assert!(stats.data_bytes >= stats.bytes);
    assert!(stats.file_bytes >= stats.data_bytes);
    assert_eq!(stats.oldest, Some(t0()));
    assert_eq!(stats.newest, Some(t0() + STEP * 19));

    let integrity = db.check_integrity().expect("check");
    assert!(integrity.is_ok(), "{integrity:?}");
    assert_eq!(integrity.redb, RedbCheck::Clean);
    assert_eq!(integrity.profiles, 120);

    // Reopened: same series ids, new profiles join the existing series.
    let ids: Vec<u64> = series.iter().map(|s| s.id).collect();
    drop(db);
    let db = Db::open(dir.path()).expect("reopen");
    assert_eq!(
        db.series()
            .expect("series")
            .iter()
            .map(|s| s.id)
            .collect::<Vec<_>>(),
        ids
    );
    let again = db
        .append(&[profile(
            labels("cart", "10.0.0.1:6060", "process_cpu"),
            pprof(7, 10, 5),
            t0() + STEP * 20,
        )])
        .expect("append");
    assert_eq!((again.profiles, again.new_series), (1, 0));
    assert_eq!(dump(&db).len(), 121);
}

#[test]
fn plain_duplicate_and_invalid_profiles() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path()).expect("open");
    let gz = pprof(1, 30, 30);
    let plain = gunzip(&gz);
    let l = labels("svc", "a:1", "process_cpu");
    let appended = db
        .append(&[
            profile(l.clone(), plain.clone(), t0()),
            // Same series, same instant: kept, a nanosecond later.
            profile(l.clone(), gz.clone(), t0()),
            profile(vec![("__address__".into(), "a:1".into())], gz.clone(), t0()),
            profile(vec![("bad-name".into(), "x".into())], gz.clone(), t0()),
            profile(l.clone(), Vec::new(), t0()),
        ])
        .expect("append");
    assert_eq!(appended.profiles, 2);
    assert_eq!(appended.invalid_labels, 2);
    assert_eq!(appended.invalid_profile, 1);
    assert!(
        appended
            .first_skip
            .as_deref()
            .is_some_and(|s| s.contains("service name is required")),
        "{appended:?}"
    );
    let all = dump(&db);
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].2, t0());
    assert_eq!(all[1].2, t0() + Duration::from_nanos(1));
    // Plain protobuf is stored gzipped; gzip is stored as received.
    assert!(all[0].3.starts_with(&[0x1f, 0x8b]));
    assert_eq!(gunzip(&all[0].3), plain);
    assert_eq!(all[1].3, gz);
    // An empty batch, or one with nothing valid, commits nothing and is no error.
    assert_eq!(db.append(&[]).expect("empty").profiles, 0);
    assert!(db.check_integrity().expect("check").is_ok());
}

#[test]
fn marks_round_trip() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path()).expect("open");
    db.add_mark("upgrade to 0.101.0 started", t0() + STEP)
        .expect("mark");
    db.add_mark("  upgrade done  ", t0() + STEP * 3)
        .expect("mark");
    db.add_mark("before", t0()).expect("mark");
    assert_eq!(
        db.marks(t0() + STEP, t0() + STEP * 4).expect("marks"),
        vec![
            ("upgrade to 0.101.0 started".to_string(), t0() + STEP),
            ("upgrade done".to_string(), t0() + STEP * 3),
        ]
    );
    assert_eq!(db.marks(t0(), t0() + STEP * 10).expect("marks").len(), 3);
    assert!(db.marks(t0() + STEP * 4, t0()).expect("marks").is_empty());
    assert!(matches!(
        db.add_mark("  ", t0()),
        Err(StoreError::InvalidMark(_))
    ));
    assert!(db.add_mark(&"x".repeat(2000), t0()).is_err());
    assert_eq!(db.stats().expect("stats").marks, 3);
}

#[test]
fn retention_by_age_then_size_oldest_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path()).expect("open");
    let now = t0() + Duration::from_secs(48 * 3600);
    let hour = Duration::from_secs(3600);
    // "old" only has profiles from two days ago; "live" one per hour for 48 h.
    for h in 0..48u32 {
        let at = t0() + hour * h;
        let mut batch = vec![profile(
            labels("live", "a:1", "process_cpu"),
            pprof(u64::from(h), 100, 50),
            at,
        )];
        if h < 5 {
            batch.push(profile(
                labels("old", "b:1", "process_cpu"),
                pprof(1000 + u64::from(h), 100, 50),
                at,
            ));
        }
        db.append(&batch).expect("append");
    }
    db.add_mark("ancient", t0()).expect("mark");
    db.add_mark("recent", now - hour).expect("mark");

    let removed = db
        .enforce_retention(now, Duration::from_secs(24 * 3600), u64::MAX)
        .expect("retention");
    // Hours 0..24 of "live" (24 of them) and all 5 of "old".
    assert_eq!(removed.by_age, 29);
    assert_eq!(removed.by_size, 0);
    assert_eq!(
        removed.series, 1,
        "the old series went with its last profile"
    );
    assert_eq!(removed.marks, 1);
    let stats = db.stats().expect("stats");
    assert_eq!(stats.profiles, 24);
    assert_eq!(stats.series, 1);
    assert_eq!(stats.oldest, Some(t0() + hour * 24));
    assert_eq!(db.marks(t0(), now).expect("marks").len(), 1);
    assert!(
        db.series()
            .expect("series")
            .iter()
            .all(|s| s.label("service_name") == Some("live"))
    );

    // Half the space: the oldest go, the newest stay, and no more go than needed.
    let limit = stats.data_bytes / 2;
    let budget = size_budget(limit);
    let removed = db
        .enforce_retention(now, Duration::from_secs(24 * 3600), limit)
        .expect("retention");
    assert_eq!(removed.by_age, 0);
    assert!(removed.by_size > 0);
    let after = db.stats().expect("stats");
    assert!(after.data_bytes <= budget, "{after:?} > {budget}");
    assert_eq!(after.newest, Some(t0() + hour * 47), "recent data kept");
    let newest_deleted = pprof(23 + removed.by_size, 100, 50).len() as u64;
    let its_pages = newest_deleted.div_ceil(4068) * 4096;
    assert!(
        after.data_bytes + its_pages > budget,
        "deleted more than needed: {removed:?}"
    );
    let kept: Vec<SystemTime> = dump(&db).into_iter().map(|p| p.2).collect();
    let first_kept = t0() + hour * (24 + removed.by_size as u32);
    assert_eq!(
        kept.first(),
        Some(&first_kept),
        "deleted strictly oldest first"
    );
    assert_eq!(kept.len() as u64, 24 - removed.by_size);

    // Nothing more to do: a no-op.
    let again = db
        .enforce_retention(now, Duration::from_secs(24 * 3600), limit)
        .expect("retention");
    assert_eq!(again.profiles(), 0);

    // A limit below one profile empties the store; the store stays usable.
    let all = db
        .enforce_retention(now, Duration::from_secs(24 * 3600), 1)
        .expect("retention");
    assert_eq!(all.by_size, kept.len() as u64);
    let empty = db.stats().expect("stats");
    assert_eq!(
        (empty.profiles, empty.series, empty.bytes, empty.data_bytes),
        (0, 0, 0, 0)
    );
    let integrity = db.check_integrity().expect("check");
    assert!(integrity.is_ok(), "{integrity:?}");
    db.append(&[profile(
        labels("live", "a:1", "process_cpu"),
        pprof(9, 10, 10),
        now,
    )])
    .expect("append after emptying");
    assert!(db.check_integrity().expect("check").is_ok());
}

#[test]
fn retention_of_a_large_backlog_runs_in_steps() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path()).expect("open");
    let raw = pprof(3, 5, 5);
    for chunk in 0..5u32 {
        let batch: Vec<_> = (0..1000u32)
            .map(|i| {
                profile(
                    labels(&format!("svc{}", i % 7), "a:1", "process_cpu"),
                    raw.clone(),
                    t0() + Duration::from_millis(u64::from(chunk * 1000 + i)),
                )
            })
            .collect();
        db.append(&batch).expect("append");
    }
    let removed = db
        .enforce_retention(
            t0() + Duration::from_secs(3600),
            Duration::from_secs(60),
            u64::MAX,
        )
        .expect("retention");
    assert_eq!(removed.by_age, 5000);
    assert_eq!(removed.series, 7);
    assert!(db.check_integrity().expect("check").is_ok());
}

#[test]
fn reading_while_a_writer_holds_the_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    assert!(matches!(
        Db::open_read_only(dir.path()),
        Err(StoreError::NotFound { .. })
    ));
    let writer = Arc::new(Db::open(dir.path()).expect("open"));
    writer
        .append(&[profile(
            labels("svc", "a:1", "process_cpu"),
            pprof(1, 50, 50),
            t0(),
        )])
        .expect("append");
    writer.add_mark("m", t0()).expect("mark");

    // A second writer is refused with a clear error.
    let err = Db::open(dir.path()).expect_err("locked");
    assert!(err.is_locked(), "{err}");
    assert!(
        err.to_string().contains("in use by another process"),
        "{err}"
    );

    // A reader gets a snapshot from the writer, served as a running store would.
    let stop = Arc::new(AtomicBool::new(false));
    let server = std::thread::spawn({
        let (writer, stop) = (writer.clone(), stop.clone());
        move || {
            let mut served = 0;
            while !stop.load(Ordering::Relaxed) {
                served += writer.serve_snapshot_requests().expect("serve");
                std::thread::sleep(Duration::from_millis(20));
            }
            served
        }
    });
    let reader = Db::open_read_only(dir.path()).expect("snapshot");
    assert_eq!(reader.mode(), Mode::Snapshot);
    // Written after the snapshot: not in it.
    writer
        .append(&[profile(
            labels("svc", "a:1", "process_cpu"),
            pprof(2, 50, 50),
            t0() + STEP,
        )])
        .expect("append");
    assert_eq!(dump(&reader).len(), 1);
    assert_eq!(reader.marks(t0(), t0() + STEP).expect("marks").len(), 1);
    let integrity = reader.check_integrity().expect("check");
    assert!(integrity.is_ok(), "{integrity:?}");
    assert!(matches!(
        reader.add_mark("x", t0()),
        Err(StoreError::ReadOnly { .. })
    ));
    stop.store(true, Ordering::Relaxed);
    assert_eq!(server.join().expect("server"), 1);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .expect("ls")
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n != "profiles.redb")
        .collect();
    assert!(leftovers.is_empty(), "snapshot files left: {leftovers:?}");
    drop(reader);

    // No writer: opened in place, read-only, and several readers at once.
    drop(writer);
    let a = Db::open_read_only(dir.path()).expect("read-only");
    let b = Db::open_read_only(dir.path()).expect("second reader");
    assert_eq!(a.mode(), Mode::ReadOnly);
    assert_eq!(dump(&a).len(), 2);
    assert_eq!(dump(&b).len(), 2);
    assert!(matches!(
        a.append(&[profile(
            labels("svc", "a:1", "process_cpu"),
            pprof(3, 5, 5),
            t0()
        )]),
        Err(StoreError::ReadOnly { .. })
    ));
    let integrity = a.check_integrity().expect("check");
    assert_eq!(integrity.redb, RedbCheck::Skipped);
    assert!(integrity.is_ok(), "{integrity:?}");
}

#[test]
fn opening_refuses_what_is_not_a_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("profiles.redb"),
        b"not a database at all, really",
    )
    .expect("write");
    let err = Db::open(dir.path()).expect_err("garbage");
    assert!(err.to_string().contains("profiles.redb"), "{err}");

    // A redb database of another version of the layout.
    let other = tempfile::tempdir().expect("tempdir");
    {
        let db = redb::Database::create(other.path().join("profiles.redb")).expect("create");
        let txn = db.begin_write().expect("txn");
        txn.open_table(redb::TableDefinition::<&str, u64>::new("meta"))
            .expect("table")
            .insert("version", 99)
            .expect("insert");
        txn.commit().expect("commit");
    }
    let err = Db::open(other.path()).expect_err("version");
    assert!(
        matches!(
            err,
            StoreError::Version {
                found: 99,
                expected: 1,
                ..
            }
        ),
        "{err}"
    );
    let err = Db::open_read_only(other.path()).expect_err("version");
    assert!(matches!(err, StoreError::Version { .. }), "{err}");

    // A path that is a file.
    let file = dir.path().join("plain-file");
    std::fs::write(&file, b"x").expect("write");
    let err = Db::open(&file).expect_err("not a directory");
    assert!(err.to_string().contains("plain-file"), "{err}");
}

#[test]
fn last_profile_is_the_newest_in_the_range_chunks_joined() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path()).expect("open");
    // The newest one is large enough to be stored in several chunks.
    let bodies = [pprof(1, 10, 5), pprof(2, 10, 5), pprof(3, 300, 200)];
    assert!(bodies[2].len() > 3 * 4096, "{} bytes", bodies[2].len());
    let at = |i: u64| t0() + Duration::from_secs(i);
    for (i, body) in bodies.iter().enumerate() {
        db.append(&[profile(
            labels("svc", "10.0.0.1:6060", "process_cpu"),
            body.clone(),
            at(i as u64),
        )])
        .expect("append");
    }
    let id = db.series().expect("series")[0].id;
    let (when, bytes) = db
        .last_profile(id, at(0), at(3))
        .expect("reads")
        .expect("found");
    assert_eq!((when, gunzip(&bytes)), (at(2), gunzip(&bodies[2])));
    let (when, bytes) = db
        .last_profile(id, at(0), at(2))
        .expect("reads")
        .expect("found");
    assert_eq!((when, gunzip(&bytes)), (at(1), gunzip(&bodies[1])));
    assert_eq!(db.last_profile(id, at(3), at(9)).expect("reads"), None);
    assert_eq!(db.last_profile(id + 7, at(0), at(9)).expect("reads"), None);
}
