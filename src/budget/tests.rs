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
