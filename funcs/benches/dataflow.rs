//! Dataflow runtime benchmarks: latency from a stream value to the settled snapshot
//! through a 10,000-node chain, a 10,000-element map over a lambda (all new elements and
//! one changed element), and pure-node evaluation throughput.

#[path = "../tests/it/runtime_support/mod.rs"]
mod runtime_support;

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use funcs::api::Host;
use funcs::runtime::Dataflow;
use lang::ir::NodeKind;
use lang::syntax::ast::BinOp;
use lang::types::Type;
use lang::value::Value;
use runtime_support::*;

const CHAIN: usize = 10_000;
const ELEMENTS: i64 = 10_000;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("tokio runtime")
}

/// `test.input(id) |> add1 |> add1 ... (CHAIN times)`
fn chain(id: &str) -> G {
    let mut g = G::new();
    let mut x = g.input(id, Type::Int);
    for _ in 0..CHAIN {
        x = g.add1(x);
    }
    g.output("out", x);
    g
}

/// Sets `id` to successive values and waits for each snapshot showing it.
fn bench_changes(c: &mut Criterion, name: &str, id: &'static str, g: G, expect: fn(i64) -> Value, elems: u64) {
    let rt = runtime();
    let mut group = c.benchmark_group("dataflow");
    group.throughput(Throughput::Elements(elems));
    group.measurement_time(Duration::from_secs(5));
    rt.block_on(async {
        set(id, Value::Int(0));
    });
    let mut df = rt.block_on(async { Dataflow::start(g.finish(), registry(), Host::default()) });
    let mut next_value = 0i64;
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    next_value += 1;
                    set(id, Value::Int(next_value));
                    let want = expect(next_value);
                    until(&mut df, |o| v(o, "out").as_ref() == Some(&want)).await;
                }
                start.elapsed()
            })
        })
    });
    group.finish();
    rt.block_on(df.shutdown());
}

fn chain_latency(c: &mut Criterion) {
    bench_changes(
        c,
        "chain_10k_change_to_snapshot",
        "bench.chain",
        chain("bench.chain"),
        |i| Value::Int(i + CHAIN as i64),
        CHAIN as u64,
    );
}

/// `test.map($list, func($x) { $x + 1 })`
fn map_graph(id: &str) -> G {
    let mut g = G::new();
    let list = g.input(id, list_ty(Type::Int));
    let (x, px) = g.param("x", Type::Int);
    let one = g.int(1);
    let body = g.bin(BinOp::Add, px, one, Type::Int);
    let lambda = g.node(NodeKind::Lambda { params: vec![x], body }, Type::func(vec![Type::Int], Type::Int));
    let mapped = g.call("test.map", vec![list, lambda], list_ty(Type::Int));
    let last = g.int(ELEMENTS - 1);
    let tail = g.node(NodeKind::Index { base: mapped, index: last }, Type::Int);
    g.output("out", tail);
    g
}

fn map_fresh(c: &mut Criterion) {
    // Every iteration shifts every element: 10,000 new lambda-body instances.
    let rt = runtime();
    let mut group = c.benchmark_group("dataflow");
    group.throughput(Throughput::Elements(ELEMENTS as u64));
    group.measurement_time(Duration::from_secs(8));
    let list = |base: i64| Value::list((0..ELEMENTS).map(|i| Value::Int(base + i)).collect());
    rt.block_on(async { set("bench.map.fresh", list(0)) });
    let mut df =
        rt.block_on(async { Dataflow::start(map_graph("bench.map.fresh").finish(), registry(), Host::default()) });
    let mut base = 0;
    group.bench_function("map_10k_all_elements_new", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    base += ELEMENTS;
                    let l = list(base);
                    let want = Value::Int(base + ELEMENTS);
                    let start = Instant::now();
                    set("bench.map.fresh", l);
                    until(&mut df, |o| v(o, "out").as_ref() == Some(&want)).await;
                    total += start.elapsed();
                }
                total
            })
        })
    });
    group.finish();
    rt.block_on(df.shutdown());
}

fn map_one_changed(c: &mut Criterion) {
    // Only the last element changes: one body re-evaluates, 9,999 are cache hits.
    let rt = runtime();
    let mut group = c.benchmark_group("dataflow");
    group.measurement_time(Duration::from_secs(5));
    let list =
        |last: i64| Value::list((0..ELEMENTS).map(|i| Value::Int(if i == ELEMENTS - 1 { last } else { i })).collect());
    rt.block_on(async { set("bench.map.one", list(-1)) });
    let mut df =
        rt.block_on(async { Dataflow::start(map_graph("bench.map.one").finish(), registry(), Host::default()) });
    let mut last = 1_000_000;
    group.bench_function("map_10k_one_element_changed", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    last += 1;
                    let l = list(last);
                    let want = Value::Int(last + 1);
                    let start = Instant::now();
                    set("bench.map.one", l);
                    until(&mut df, |o| v(o, "out").as_ref() == Some(&want)).await;
                    total += start.elapsed();
                }
                total
            })
        })
    });
    group.finish();
    rt.block_on(df.shutdown());
}

/// 100 independent chains of 100 `+ 1` operators off one stream, summed: 10,000 pure
/// evaluations per change, measured as elements per second.
fn pure_throughput(c: &mut Criterion) {
    let mut g = G::new();
    let s = g.input("bench.wide", Type::Int);
    let one = g.int(1);
    let mut tails = Vec::new();
    for _ in 0..100 {
        let mut x = s;
        for _ in 0..99 {
            x = g.bin(BinOp::Add, x, one, Type::Int);
        }
        tails.push(x);
    }
    let mut sum = tails[0];
    for t in &tails[1..] {
        sum = g.bin(BinOp::Add, sum, *t, Type::Int);
    }
    g.output("out", sum);
    // 100 chains × 99 adds + 99 sums + the stream itself = 10,000 computations.
    bench_changes(c, "pure_evaluations_10k_per_change", "bench.wide", g, |i| Value::Int(100 * (i + 99)), 10_000);
}

criterion_group!(benches, chain_latency, map_fresh, map_one_changed, pure_throughput);
criterion_main!(benches);
