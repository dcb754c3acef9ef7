//! The `example` package (and `example/nested`): tiny functions from mgmt's examples.

use super::convert::go_parse_int;
use super::typed;
use crate::api::FuncError;
use crate::api::FuncResult;
use crate::builtin;
use crate::registry::Registry;
use crate::streaming;
use lang::value::Value;
use std::time::Duration;

pub fn register(r: &mut Registry) {
    typed(r, "example.answer", example_answer::DEF);
    typed(r, "example.errorbool", example_errorbool::DEF);
    typed(r, "example.int2str", example_int2str::DEF);
    typed(r, "example.str2int", example_str2int::DEF);
    typed(r, "example.plus", example_plus::DEF);
    typed(r, "example.flipflop", flipflop::DEF);
    typed(r, "example.vumeter", vumeter::DEF);
    typed(r, "example/nested.hello", example_nested_hello::DEF);
}

streaming! {
    /// toggles every 5 s
    fn flipflop(em) -> "bool" {
        let mut v = false;
        while em.value(Value::Bool(v)).await {
            tokio::time::sleep(Duration::from_secs(5)).await;
            v = !v;
        }
    }
}

streaming! {
    /// a bar of symbols as loud as the microphone is (sox's `rec` and `sox`), every second
    fn vumeter(em, symbol: String, multiplier: i64, peak: f64) -> "str" {
        let wav = std::env::temp_dir().join(format!("tend-vumeter-{}.wav", std::process::id()));
        loop {
            let r = listen_once(&wav).await.and_then(|ratio| vu_visual(&symbol, multiplier, peak, ratio));
            if !em.send(r).await {
                let _ = std::fs::remove_file(&wav);
                return;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
}

/// Records a second of sound into `wav` and asks sox for its peak amplitude (0..1).
async fn listen_once(wav: &std::path::Path) -> Result<f64, FuncError> {
    let run = |prog: &'static str, args: Vec<std::ffi::OsString>| async move {
        let out = crate::command::new(prog)
            .args(args)
            .output()
            .await
            .map_err(|e| FuncError::catchable(format!("example.vumeter: running `{prog}` (sox's): {e}")))?;
        if !out.status.success() {
            return Err(FuncError::catchable(format!("example.vumeter: `{prog}` failed: {}", out.status)));
        }
        // sox prints its statistics on stderr.
        Ok(String::from_utf8_lossy(&[out.stdout, out.stderr].concat()).into_owned())
    };
    run("rec", vec![wav.into(), "trim".into(), "0".into(), "1".into()]).await?;
    let stats = run("sox", vec!["-t".into(), ".wav".into(), wav.into(), "-n".into(), "stat".into()]).await?;
    vu_amplitude(&stats)
}

/// The `Maximum amplitude:` line of `sox … stat`.
fn vu_amplitude(stats: &str) -> Result<f64, FuncError> {
    let line = stats
        .lines()
        .find_map(|l| l.strip_prefix("Maximum amplitude:"))
        .ok_or_else(|| FuncError::catchable("example.vumeter: sox printed no maximum amplitude"))?;
    line.trim().parse().map_err(|e| FuncError::catchable(format!("example.vumeter: amplitude {line:?}: {e}")))
}

/// mgmt's meter: `multiplier × ratio` symbols (at least one), ` PEAK!!!` above `peak`,
/// under the ratio, twice.
fn vu_visual(symbol: &str, multiplier: i64, peak: f64, ratio: f64) -> FuncResult {
    if !(0.0..=1.0).contains(&ratio) {
        return Err(FuncError::catchable(format!("example.vumeter: invalid ratio of {ratio:.6}")));
    }
    let n = (ratio * multiplier as f64).round().max(1.0) as usize;
    let mut bar = symbol.repeat(n);
    if ratio > peak {
        bar.push_str(" PEAK!!!");
    }
    Ok(Value::str(format!("({ratio:.6}):\n{bar}\n{bar}")))
}

builtin! {
    /// 42
    fn example_answer() -> i64 {
        42
    }
}

builtin! {
    /// fails when a is true
    fn example_errorbool(a: bool) -> FuncResult as "str" {
        if a {
            Err(FuncError::fatal("errorbool: we errored on request"))
        } else {
            Ok(Value::str("set false"))
        }
    }
}

builtin! {
    /// an int as a str
    fn example_int2str(a: i64) -> String {
        a.to_string()
    }
}

builtin! {
    /// a str as an int (0 when it is not one)
    fn example_str2int(a: &str) -> i64 {
        go_parse_int(a, 10).unwrap_or(0)
    }
}

builtin! {
    /// the concatenation of y and z
    fn example_plus(y: &str, z: &str) -> String {
        format!("{}{}", y, z)
    }
}

builtin! {
    /// Hello!
    fn example_nested_hello() -> String {
        String::from("Hello!")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_meter_reads_sox_and_draws_the_bar() {
        let stats = "Samples read: 44100\nMaximum amplitude:     0.503906\nMinimum amplitude: -0.5\n";
        assert_eq!(vu_amplitude(stats).unwrap(), 0.503906);
        assert!(vu_amplitude("no such line").is_err());
        assert_eq!(vu_visual("=", 10, 0.9, 0.5).unwrap(), Value::str("(0.500000):\n=====\n====="));
        assert_eq!(vu_visual("#", 4, 0.5, 0.95).unwrap(), Value::str("(0.950000):\n#### PEAK!!!\n#### PEAK!!!"));
        assert_eq!(vu_visual("=", 10, 0.9, 0.0).unwrap(), Value::str("(0.000000):\n=\n="));
        assert!(vu_visual("=", 10, 0.9, 1.5).is_err());
    }
}
