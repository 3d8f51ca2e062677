//! `scraper run FILE`: load the config, serve HTTP, reload on SIGHUP (or when the watched config
//! changes), stop on SIGINT/SIGTERM.

use std::process::ExitCode;

use anyhow::{Context as _, bail};
use tokio::net::TcpListener;
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

use super::RunArgs;
use crate::budget::{Budget, BudgetMetrics, parse_limit};
use crate::components;
use crate::runtime::logging::{self, LoggingConfig, LoggingHandle};
use crate::runtime::process_metrics::ProcessCollector;
use crate::runtime::{Controller, ControllerOptions, MetricsRegistry, Services};
use crate::server::{self, AppState};
use crate::store::OpenStores;

/// How often the memory budget reads RSS: fast enough to follow a burst of scrapes.
const BUDGET_SAMPLE_INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);

pub(super) fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    // Installed before anything else so that startup is logged; the config's `logging` block
    // adjusts it once loaded.
    let logging = logging::init(LoggingConfig::default()).context("setting up logging")?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(run_async(args, logging))?;
    Ok(ExitCode::SUCCESS)
}

async fn run_async(args: RunArgs, logging: LoggingHandle) -> anyhow::Result<()> {
    tracing::info!(version = env!("CARGO_PKG_VERSION"), "starting scraper");
    for ignored in args.alloy.ignored().map_err(anyhow::Error::msg)? {
        tracing::warn!(
            flag = ignored.flag,
            reason = ignored.reason,
            "Alloy flag accepted but has no effect in scraper"
        );
    }
    let metrics = MetricsRegistry::new();
    metrics.register_collector(Box::new(ProcessCollector));
    let limit = parse_limit(&args.memory_limit)?;
    let budget = Budget::new(limit);
    budget.set_metrics(BudgetMetrics::register(&metrics));
    let sampling = budget.start_sampler(BUDGET_SAMPLE_INTERVAL);
    if limit > 0 {
        tracing::info!(
            limit_bytes = limit,
            rss_sampled = sampling,
            "memory budget set"
        );
    } else {
        tracing::info!("no memory budget (--memory.limit)");
    }
    // One registry of open stores, shared by the `pyroscope.store` components (which join it)
    // and the server (which records marks in them).
    let stores = OpenStores::default();
    // Listen before loading, as Alloy does: `/-/ready` answers 503 while the config loads.
    let listener = TcpListener::bind(&args.listen_addr)
        .await
        .with_context(|| format!("failed to listen on {}", args.listen_addr))?;
    // The cluster service needs the address peers reach us at, hence after listening.
    let stop_cluster = CancellationToken::new();
    let listening = listener
        .local_addr()
        .context("reading the listen address")?;
    let cluster = args
        .cluster
        .start(listening, &metrics, stop_cluster.clone())?;
    let controller = Controller::new(ControllerOptions {
        registry: components::builtin(),
        storage_path: args.storage_path.clone(),
        metrics,
        logging: Some(logging),
        services: Services::default()
            .with(budget.clone())
            .with(stores.clone())
            .with(cluster.clone()),
    });
    // Said here, before anything else can fail, rather than in the server's task: a config
    // that fails to load ends the process before a spawned task is sure to have run.
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(addr = %addr, "now listening for http traffic");
    }
    let state = AppState {
        controller: controller.clone(),
        config_path: args.file.clone(),
        stores,
        budget,
        types: Default::default(),
        cluster,
    };
    let stop_server = CancellationToken::new();
    let mut server = crate::runtime::task::spawn(
        "server",
        server::serve(listener, state.clone(), stop_server.clone()),
    );

    let mut sigint = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    let mut sigterm = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut sighup = signal(SignalKind::hangup()).context("installing the SIGHUP handler")?;

    // Compares the file with what the controller last applied, so a change made while the
    // initial config loads is reloaded.
    let mut watch = super::watch::ConfigWatch::new(&args.file, *args.config_watch_interval);
    if let Err(e) = controller.load_file(&args.file).await {
        eprint!("{}", e.render());
        stop_server.cancel();
        stop_cluster.cancel();
        controller.shutdown().await;
        bail!("could not perform the initial load successfully");
    }
    tracing::info!(file = %args.file.display(), "config loaded");

    let server_result = loop {
        tokio::select! {
            _ = sigint.recv() => break None,
            _ = sigterm.recv() => break None,
            _ = sighup.recv() => {
                tracing::info!("reload requested via SIGHUP");
                // The outcome is logged by `reload`; a bad file keeps the running graph.
                let _ = state.reload().await;
            }
            source = watch.changed(&controller) => {
                tracing::info!(file = %args.file.display(), "reload requested: the config changed");
                let _ = state.reload_source(source).await;
            }
            result = &mut server => break Some(result),
        }
    };
    tracing::info!("shutting down");
    stop_server.cancel();
    stop_cluster.cancel();
    controller.shutdown().await;
    let result = match server_result {
        Some(result) => result,
        None => server.await,
    };
    match result {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(e).context("http server failed"),
        Err(e) => Err(e).context("http server task failed"),
    }
}
