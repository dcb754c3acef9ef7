//! Parse + resolve + unify of a generated 10,000-line program (classes, lambdas, lists,
//! printf), through the same pipeline `tend check` runs; and of 1,000 declared types with
//! 10,000 constructions, beside the same shapes written as plain structs.

use criterion::{Criterion, criterion_group, criterion_main};
use lang::loader::MemLoader;
use std::fmt::Write;

/// `types` struct-typed funcs and `constructions` calls of them with struct literals: the
/// baseline the declared-types benchmark is read against (same shapes, no declarations).
fn generate_structs(types: usize, constructions: usize) -> String {
    let mut s = String::new();
    for t in 0..types {
        let _ = writeln!(s, "func f{t}($v struct{{name str; port int; tls bool}}) str {{ $v->name }}");
    }
    let mut names = Vec::with_capacity(constructions);
    for i in 0..constructions {
        let _ = writeln!(
            s,
            "$c{i} = f{t}(struct{{name => \"n{i}\", port => {p}, tls => false}})",
            t = i % types,
            p = i + 1
        );
        names.push(format!("$c{i}"));
    }
    let _ = writeln!(s, "test [{}] {{}}", names.join(", "));
    s
}

/// `types` declared types (each with a default, a check and an invariant), a func taking
/// each, and `constructions` values of them passed to those funcs.
fn generate_types(types: usize, constructions: usize) -> String {
    let mut s = String::new();
    for t in 0..types {
        let _ = writeln!(
            s,
            "type t{t} {{\n\tattr name str\n\tattr port int {{ default => 80, check => $it > 0, }}\n\
             \tattr tls bool {{ default => false, }}\n\tinvariant \"named\" {{ $name != \"\" }}\n}}\n\
             func f{t}($v t{t}) str {{ $v->name }}"
        );
    }
    let mut names = Vec::with_capacity(constructions);
    for i in 0..constructions {
        let _ = writeln!(s, "$c{i} = f{t}(t{t}{{name => \"n{i}\", port => {p}}})", t = i % types, p = i + 1);
        names.push(format!("$c{i}"));
    }
    let _ = writeln!(s, "test [{}] {{}}", names.join(", "));
    s
}

fn bench(c: &mut Criterion) {
    let registry = funcs::registry::Registry::core();
    let mut catalog = registry.catalog();
    resources::declare(&mut catalog);
    let programs = [
        ("check_10k_lines", testkit::programs::mixed(10_000)),
        ("structs_1k_funcs_10k_literals", generate_structs(1_000, 10_000)),
        ("types_1k_declared_10k_constructions", generate_types(1_000, 10_000)),
    ];
    let mut group = c.benchmark_group("frontend");
    group.sample_size(10);
    for (name, program) in &programs {
        let loader = MemLoader::new().with("/main.mcl", program);
        let outcome = lang::pipeline::compile("/main.mcl", &loader, &catalog);
        assert!(outcome.diagnostics.is_empty(), "{name} must compile: {:?}", outcome.diagnostics.first());
        group.bench_function(*name, |b| {
            b.iter(|| {
                let outcome = lang::pipeline::compile("/main.mcl", &loader, &catalog);
                assert!(outcome.graph.is_some());
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
