//! A mutation fuzzer for the front end's grammar, Puppet's catalog expressions and the
//! type language included: seed programs are cut, spliced and sprinkled with tokens, and
//! every result must go through parse, init and interpolate (and, when those accept it,
//! scope, unification and the checks of declared types) without panicking, with every
//! diagnostic span inside the input. It runs for `TEND_FUZZ_SECS` seconds (2 by default; the session that
//! brought the new grammar ran it for 600). `cargo fuzz` runs `fuzz/` the same way where
//! it is installed.

use lang::span::FileId;
use std::time::{Duration, Instant};

const SEEDS: &[&str] = &[
    "File[\"/a\"] ~> Exec[\"x\"] <- [Svc[\"s\"], Pkg[\"p\"],]\nExec[\"y\"] <~ File <| tag == \"web\" |>\n",
    "File {\n\tmode => \"0644\",\n\tMeta:noop => true,\n}\nFile[[\"/a\", \"/b\"]] {\n\tfragments +> [\"/c\"],\n}\n",
    "@file \"/v\" {\n\tMeta:tags => [\"a\"],\n}\n@@file \"/e\" {}\nFile <| (title == \"/v\" or tag != $t) and mode == \"0600\" |> {\n\tmode => \"0640\",\n}\nFile <<| |>>\nrealize(File[\"/v\"], File[\"/w\"])\n",
    "node \"web1\", /^db\\d+$/, default {\n\ttest \"a\" {}\n}\nnode /x/ {\n}\n",
    "import \"fmt\"\n$x = if $a<-1 { fmt.printf(\"%d\", 1) } else { 2 }\nclass c($p) {\n\tfile \"${p}\" {\n\t\tcontent => \"x\",\n\t}\n}\ninclude c(\"/p\")\n",
    "func f($a int, $b int = $a * 2) int {\n\t$a + $b\n}\nclass web($name str, $port int = 80) {\n}\ninclude web(\"a\", port => f(1, b => 3))\n",
    "private $x = 1\nprivate func min($a int, $b int) int {\n\t$a\n}\nfunc min($s str, $t str) str {\n\t$s\n}\nprivate class c {\n}\n",
    "type port = int\ntype vhost {\n\tattr name str\n\tattr port port { default => 80, check => $it > 0, }\n\tattr s enum[\"a\", \"b\"]\n\tinvariant \"m\" { $port != 1 }\n}\ntype t inherits vhost {\n}\n$v vhost = vhost{name => \"a\", port => 1}\n",
];

const TOKENS: &[&str] = &[
    "<|",
    "|>",
    "<<|",
    "|>>",
    "@",
    "@@",
    "~>",
    "<~",
    "<-",
    "->",
    "+>",
    "=>",
    " = ",
    "attr ",
    "invariant ",
    "type ",
    "=>",
    "node ",
    "default",
    "/",
    "/^a$/",
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    ",",
    "\n",
    "\"s\"",
    "$v",
    "File",
    "file ",
    "and ",
    "or ",
    "==",
    "!=",
    "realize(",
    "Meta:tags",
    "inherits ",
    "#",
    "\\",
    "${",
    "\t",
];

/// xorshift64*: deterministic, so a failure names its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// A char boundary at or before `i`.
fn boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn mutate(rng: &mut Rng, text: &str) -> String {
    let mut s = text.to_string();
    for _ in 0..1 + rng.below(4) {
        let at = boundary(&s, rng.below(s.len() + 1));
        match rng.below(4) {
            0 => s.insert_str(at, TOKENS[rng.below(TOKENS.len())]),
            1 => {
                let end = boundary(&s, at + rng.below(12));
                s.replace_range(at..end, "");
            }
            2 => {
                let other = SEEDS[rng.below(SEEDS.len())];
                let from = boundary(other, rng.below(other.len()));
                let to = boundary(other, from + rng.below(40));
                s.insert_str(at, &other[from..to]);
            }
            _ => {
                let end = boundary(&s, at + rng.below(20));
                let piece = s[at..end].to_string();
                s.insert_str(end, &piece);
            }
        }
    }
    s
}

fn check(text: &str) {
    let (file, mut diags) = lang::syntax::parse(FileId(0), text);
    diags.extend(lang::init::check(&file));
    let (_, more) = lang::interpolate::run(file);
    diags.extend(more);
    if diags.is_empty() {
        // A program the front end accepts goes through scope, unification and the checks
        // of declared types too (with no built-ins: calls are errors, not panics).
        let loader = lang::loader::MemLoader::new().with("/main.mcl", text);
        diags.extend(lang::pipeline::compile("/main.mcl", &loader, &lang::catalog::Catalog::new()).diagnostics);
    }
    for d in diags.iter() {
        if let Some(span) = d.span {
            assert!(
                span.start <= span.end && span.end as usize <= text.len(),
                "bad span {span:?} for {d:?} in {text:?}"
            );
        }
    }
}

#[test]
fn mutated_programs_never_panic_the_front_end() {
    let secs: u64 = std::env::var("TEND_FUZZ_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(2);
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut cases = 0u64;
    for seed in SEEDS {
        check(seed);
    }
    while Instant::now() < deadline {
        let seed = SEEDS[rng.below(SEEDS.len())];
        let text = mutate(&mut rng, seed);
        let result = std::panic::catch_unwind(|| check(&text));
        assert!(result.is_ok(), "the front end panicked on {text:?}");
        cases += 1;
    }
    eprintln!("{cases} mutated programs parsed");
}
