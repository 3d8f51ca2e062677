use super::*;
use crate::runtime::MetricsRegistry;

#[test]
fn reservations_account_and_release() {
    let b = Budget::new(1000);
    let r1 = b
        .try_reserve(Use::Scrape, Priority::High, 300)
        .expect("fits");
    let r2 = b.reserve(Use::DeltaState, 200);
    assert_eq!(
        (b.used(), b.used_by(Use::Scrape), b.used_by(Use::DeltaState)),
        (500, 300, 200)
    );
    drop(r1);
    assert_eq!((b.used(), b.used_by(Use::Scrape)), (200, 0));
    drop(r2);
    assert_eq!(b.used(), 0);
}

#[test]
fn lower_priorities_are_refused_first() {
    // Ceilings: low 700, normal 800, high 900.
    let b = Budget::new(1000);
    let _held = b.reserve(Use::DeltaState, 650);
    assert!(b.try_reserve(Use::Scrape, Priority::Low, 60).is_none());
    assert!(
        b.try_reserve(Use::Scrape, Priority::Low, 50)
            .is_some_and(|r| r.bytes() == 50)
    );
    let normal = b
        .try_reserve(Use::Scrape, Priority::Normal, 150)
        .expect("normal fits in 800");
    assert!(b.try_reserve(Use::Scrape, Priority::Normal, 1).is_none());
    assert!(b.over(Priority::Low) && !b.over(Priority::Normal));
    let high = b
        .try_reserve(Use::Scrape, Priority::High, 100)
        .expect("high fills 900");
    assert!(b.try_reserve(Use::Scrape, Priority::High, 1).is_none());
    drop((normal, high));
    assert_eq!(b.used(), 650);
}

#[test]
fn resizing_grows_within_the_ceiling_and_always_shrinks() {
    let b = Budget::new(1000);
    let mut r = b
        .try_reserve(Use::Scrape, Priority::Low, 100)
        .expect("fits");
    assert!(r.try_resize(Priority::Low, 700));
    assert!(!r.try_resize(Priority::Low, 701));
    assert_eq!(r.bytes(), 700);
    assert!(r.try_resize(Priority::High, 900));
    assert!(r.try_resize(Priority::Low, 10));
    assert_eq!(b.used(), 10);
    r.resize(5000);
    assert_eq!(b.used(), 5000);
    assert!(b.over(Priority::High));
    drop(r);
    assert_eq!(b.used(), 0);
}

#[test]
fn unlimited_admits_everything_but_still_accounts() {
    let b = Budget::unlimited();
    let r = b
        .try_reserve(Use::WriteQueue, Priority::Low, u64::MAX / 2)
        .expect("no limit");
    assert_eq!(b.used_by(Use::WriteQueue), u64::MAX / 2);
    assert!(!b.over(Priority::Low));
    drop(r);
    assert_eq!(b.used(), 0);
}

#[test]
fn unaccounted_memory_is_taken_off_the_budget() {
    // A limit far below this test process's RSS: the sample finds it all unaccounted, and only
    // the floor of a tenth of the budget remains for accounted work.
    let b = Budget::new(1 << 20);
    b.sample();
    assert!(b.unaccounted() > 1 << 20);
    let low_ceiling = (1u64 << 20) / 10 / 100 * 70;
    assert!(
        b.try_reserve(Use::Scrape, Priority::Low, low_ceiling)
            .is_some()
    );
    assert!(
        b.try_reserve(Use::Scrape, Priority::Low, low_ceiling + 1)
            .is_none()
    );
}

/// RSS readings in MiB against a 1,000 MiB budget: (accounted MiB reserved before the
/// reading, RSS MiB, unaccounted MiB expected after it).
#[test]
fn unaccounted_rises_at_once_falls_slowly_and_keeps_the_resident_floor() {
    const MIB: u64 = 1 << 20;
    type Readings = &'static [(u64, u64, u64)];
    let cases: &[(&str, Readings)] = &[
        (
            "a rise is taken at once, a fall by 1 % of the limit per reading",
            &[
                (100, 90, 0),
                (100, 400, 300),
                (100, 150, 290),
                (100, 150, 280),
            ],
        ),
        (
            // 40 MiB beyond 10 accounted while little is accounted: the floor. Reservations
            // made later but not yet touched hide it (RSS below the accounted bytes), and the
            // decay stops at it.
            "the floor seen while little was accounted outlasts untouched reservations",
            &[
                (10, 50, 40),
                (600, 100, 40),
                (600, 100, 40),
                (600, 700, 100),
                (600, 600, 90),
            ],
        ),
        (
            // The least reading while little was accounted wins: the first one may have
            // caught a start-up burst.
            "the floor is the least reading while little was accounted",
            &[
                (0, 80, 80),
                (0, 30, 70),
                (40, 80, 60),
                (900, 100, 50),
                (900, 100, 40),
                (900, 100, 30),
                (900, 100, 30),
            ],
        ),
        (
            "no floor while everything read was under much accounted memory",
            &[
                (600, 500, 0),
                (600, 650, 50),
                (600, 600, 40),
                (600, 600, 30),
            ],
        ),
    ];
    for (name, readings) in cases {
        let b = Budget::new(1000 * MIB);
        let mut held = Vec::new();
        for (i, &(accounted, rss, want)) in readings.iter().enumerate() {
            held.clear();
            held.push(b.reserve(Use::Scrape, accounted * MIB));
            b.observe(rss * MIB);
            assert_eq!(
                b.unaccounted() / MIB,
                want,
                "{name}: reading {i} (accounted {accounted} MiB, RSS {rss} MiB)"
            );
        }
    }
}

#[test]
fn metrics_follow_the_accounting() {
    let registry = MetricsRegistry::new();
    let b = Budget::new(1000);
    b.set_metrics(BudgetMetrics::register(&registry));
    let _r = b
        .try_reserve(Use::StoreQueue, Priority::Normal, 100)
        .expect("fits");
    assert!(
        b.try_reserve(Use::StoreQueue, Priority::Normal, 800)
            .is_none()
    );
    b.count_shed(Use::StoreQueue, Priority::Normal);
    let text = registry.encode().expect("encode");
    for line in [
        "scraper_memory_limit_bytes 1000",
        "scraper_memory_accounted_bytes{use=\"store_queue\"} 100",
        "scraper_memory_accounted_bytes{use=\"scrape\"} 0",
        "scraper_memory_refused_total{use=\"store_queue\",priority=\"normal\"} 1",
        "scraper_memory_shed_total{use=\"store_queue\",priority=\"normal\"} 1",
    ] {
        assert!(text.contains(line), "{line} missing from\n{text}");
    }
}
