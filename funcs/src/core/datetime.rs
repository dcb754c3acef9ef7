//! The `datetime` package: seconds since the Unix epoch, shown in the local time zone.

use super::streams::Emitter;
use super::typed;
use crate::api::{FuncError, FuncResult};
use crate::builtin;
use crate::registry::Registry;
use crate::streaming;
use jiff::tz::TimeZone;
use jiff::{Timestamp, Zoned};
use lang::value::Value;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub fn register(r: &mut Registry) {
    typed(r, "datetime.now", now::DEF);
    typed(r, "datetime.str_now", str_now::DEF);
    typed(r, "datetime.weekday_fast", weekday_fast::DEF);
    typed(r, "datetime.format", format::DEF);
    typed(r, "datetime.hour", hour::DEF);
    typed(r, "datetime.print", print::DEF);
    typed(r, "datetime.weekday", weekday::DEF);
}

/// A Unix time in the given zone; negative times are catchable errors.
pub fn zoned(secs: i64, tz: &TimeZone) -> Result<Zoned, FuncError> {
    if secs < 0 {
        return Err(FuncError::catchable(format!("the time must not be negative, got {secs}")));
    }
    let ts = Timestamp::from_second(secs).map_err(|e| FuncError::catchable(format!("invalid time {secs}: {e}")))?;
    Ok(ts.to_zoned(tz.clone()))
}

fn local(secs: i64) -> Result<Zoned, FuncError> {
    zoned(secs, &TimeZone::system())
}

const DAYS: [&str; 7] = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];
const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

fn day_name(z: &Zoned) -> &'static str {
    DAYS[z.weekday().to_monday_zero_offset() as usize]
}

fn abbreviation(z: &Zoned) -> String {
    z.time_zone().to_offset_info(z.timestamp()).abbreviation().to_string()
}

fn offset(out: &mut String, secs: i32, colon: bool, seconds: bool, hours_only: bool, z_for_utc: bool) {
    if z_for_utc && secs == 0 {
        out.push('Z');
        return;
    }
    let sign = if secs < 0 { '-' } else { '+' };
    let a = secs.unsigned_abs();
    let (h, m, s) = (a / 3600, (a / 60) % 60, a % 60);
    out.push(sign);
    out.push_str(&format!("{h:02}"));
    if hours_only {
        return;
    }
    if colon {
        out.push(':');
    }
    out.push_str(&format!("{m:02}"));
    if seconds {
        if colon {
            out.push(':');
        }
        out.push_str(&format!("{s:02}"));
    }
}

/// Formats a time with a Go reference layout (`Mon Jan 2 15:04:05 MST 2006`).
pub fn go_format(z: &Zoned, layout: &str) -> String {
    let mut out = String::new();
    let b = layout;
    let mut i = 0;
    let hour12 = |h: i8| if h % 12 == 0 { 12 } else { h % 12 };
    let off = z.offset().seconds();
    while i < b.len() {
        let rest = &b[i..];
        // Longest tokens first.
        let tokens: &[&str] = &[
            "January",
            "Monday",
            "Z07:00:00",
            "-07:00:00",
            "Z070000",
            "-070000",
            "Z07:00",
            "-07:00",
            "Z0700",
            "-0700",
            "2006",
            "Jan",
            "Mon",
            "MST",
            "002",
            "__2",
            "Z07",
            "-07",
            "01",
            "02",
            "_2",
            "03",
            "04",
            "05",
            "06",
            "15",
            "PM",
            "pm",
            "1",
            "2",
            "3",
            "4",
            "5",
        ];
        let tok = tokens.iter().find(|t| rest.starts_with(**t)).copied();
        // Fractional seconds: .000 / ,000 / .999
        if (rest.starts_with('.') || rest.starts_with(',')) && rest.len() > 1 {
            let digits: String = rest[1..].chars().take_while(|c| *c == '0' || *c == '9').collect();
            let next = rest[1 + digits.len()..].chars().next();
            let uniform = !digits.is_empty() && digits.chars().all(|c| c == digits.chars().next().unwrap_or('0'));
            if uniform && !next.is_some_and(|c| c.is_ascii_digit()) {
                let n = digits.len().min(9);
                let frac = format!("{:09}", z.subsec_nanosecond());
                let mut f = frac[..n].to_string();
                if digits.starts_with('9') {
                    while f.ends_with('0') {
                        f.pop();
                    }
                    if !f.is_empty() {
                        out.push('.');
                        out.push_str(&f);
                    }
                } else {
                    out.push(rest.as_bytes()[0] as char);
                    out.push_str(&f);
                }
                i += 1 + digits.len();
                continue;
            }
        }
        let Some(tok) = tok else {
            let c = rest.chars().next().unwrap_or(' ');
            out.push(c);
            i += c.len_utf8();
            continue;
        };
        match tok {
            "January" => out.push_str(MONTHS[z.month() as usize - 1]),
            "Jan" => out.push_str(&MONTHS[z.month() as usize - 1][..3]),
            "Monday" => out.push_str(day_name(z)),
            "Mon" => out.push_str(&day_name(z)[..3]),
            "MST" => out.push_str(&abbreviation(z)),
            "2006" => out.push_str(&format!("{:04}", z.year())),
            "06" => out.push_str(&format!("{:02}", z.year().rem_euclid(100))),
            "01" => out.push_str(&format!("{:02}", z.month())),
            "1" => out.push_str(&z.month().to_string()),
            "02" => out.push_str(&format!("{:02}", z.day())),
            "_2" => out.push_str(&format!("{:>2}", z.day())),
            "2" => out.push_str(&z.day().to_string()),
            "002" => out.push_str(&format!("{:03}", z.day_of_year())),
            "__2" => out.push_str(&format!("{:>3}", z.day_of_year())),
            "15" => out.push_str(&format!("{:02}", z.hour())),
            "03" => out.push_str(&format!("{:02}", hour12(z.hour()))),
            "3" => out.push_str(&hour12(z.hour()).to_string()),
            "04" => out.push_str(&format!("{:02}", z.minute())),
            "4" => out.push_str(&z.minute().to_string()),
            "05" => out.push_str(&format!("{:02}", z.second())),
            "5" => out.push_str(&z.second().to_string()),
            "PM" => out.push_str(if z.hour() >= 12 { "PM" } else { "AM" }),
            "pm" => out.push_str(if z.hour() >= 12 { "pm" } else { "am" }),
            "-0700" => offset(&mut out, off, false, false, false, false),
            "-07:00" => offset(&mut out, off, true, false, false, false),
            "-07" => offset(&mut out, off, false, false, true, false),
            "-070000" => offset(&mut out, off, false, true, false, false),
            "-07:00:00" => offset(&mut out, off, true, true, false, false),
            "Z0700" => offset(&mut out, off, false, false, false, true),
            "Z07:00" => offset(&mut out, off, true, false, false, true),
            "Z07" => offset(&mut out, off, false, false, true, true),
            "Z070000" => offset(&mut out, off, false, true, false, true),
            "Z07:00:00" => offset(&mut out, off, true, true, false, true),
            _ => out.push_str(tok),
        }
        i += tok.len();
    }
    out
}

/// Go's `time.Time.String()` for a whole-second time.
pub fn go_string(z: &Zoned) -> String {
    go_format(z, "2006-01-02 15:04:05.999999999 -0700 MST")
}

builtin! {
    /// formats a Unix time with a Go layout
    fn format(a: i64, b: &str) -> Result<String, FuncError> {
        Ok(go_format(&local(a)?, b))
    }
}
builtin! {
    /// the hour (0-23) of a Unix time
    fn hour(a: i64) -> Result<i64, FuncError> {
        Ok(local(a)?.hour() as i64)
    }
}
builtin! {
    /// a Unix time in Go's default time format
    fn print(a: i64) -> Result<String, FuncError> {
        Ok(go_string(&local(a)?))
    }
}
builtin! {
    /// the lowercase weekday name of a Unix time
    fn weekday(a: i64) -> Result<String, FuncError> {
        Ok(day_name(&local(a)?).to_lowercase())
    }
}

fn unix_now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
}

/// Emits `f(now)` at once and then at every whole second (on the tokio clock, so paused
/// time in tests advances it), skipping repeats.
async fn tick<F: FnMut(i64) -> FuncResult>(em: Emitter, mut f: F) {
    let start_wall = unix_now();
    let start = tokio::time::Instant::now();
    let mut last: Option<FuncResult> = None;
    let mut n: u64 = 0;
    loop {
        // The tokio clock drives the ticks (so paused time works in tests); the wall
        // clock wins when it is ahead (suspend, clock steps).
        let r = f((start_wall + n as i64).max(unix_now()));
        if last.as_ref() != Some(&r) {
            if !em.send(r.clone()).await {
                return;
            }
            last = Some(r);
        }
        n += 1;
        tokio::time::sleep_until(start + Duration::from_secs(n)).await;
    }
}

streaming! {
    /// the current Unix time in seconds, every second
    fn now(em) -> "int" {
        tick(em, |t| Ok(Value::Int(t))).await
    }
}

streaming! {
    /// the current time as a string, every second
    fn str_now(em) -> "str" {
        tick(em, |t| Ok(Value::str(go_string(&local(t)?)))).await
    }
}

streaming! {
    /// today's lowercase weekday name
    fn weekday_fast(em) -> "str" {
        tick(em, |t| Ok(Value::str(day_name(&local(t)?).to_lowercase()))).await
    }
}
