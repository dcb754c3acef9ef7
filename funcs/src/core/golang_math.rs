//! `golang/math` and `golang/math/rand`: Go's float functions and random numbers, under the
//! names mgmt's generator gives them (Go's name in snake case: `Log10` is `log_10`, `NaN`
//! is `na_n`, `Float64` is `float_64`).

use super::typed;
use crate::api::{FuncError, FuncResult};
use crate::builtin;
use crate::registry::Registry;
use lang::value::Value;
use rand::Rng;

pub fn register(r: &mut Registry) {
    float_fns(r);
    typed(r, "golang/math.inf", math_inf::DEF);
    typed(r, "golang/math.na_n", math_na_n::DEF);
    typed(r, "golang/math.is_na_n", math_is_na_n::DEF);
    typed(r, "golang/math.is_inf", math_is_inf::DEF);
    typed(r, "golang/math.signbit", math_signbit::DEF);
    typed(r, "golang/math.ilogb", math_ilogb::DEF);
    typed(r, "golang/math.ldexp", math_ldexp::DEF);
    typed(r, "golang/math.pow_10", math_pow_10::DEF);
    typed(r, "golang/math.jn", math_jn::DEF);
    typed(r, "golang/math.yn", math_yn::DEF);
    typed(r, "golang/math/rand.int", math_rand_int::DEF);
    typed(r, "golang/math/rand.intn", math_rand_intn::DEF);
    typed(r, "golang/math/rand.int_63", math_rand_int_63::DEF);
    typed(r, "golang/math/rand.int_63_n", math_rand_int_63_n::DEF);
    typed(r, "golang/math/rand.float_64", math_rand_float_64::DEF);
    typed(r, "golang/math/rand.exp_float_64", math_rand_exp_float_64::DEF);
    typed(r, "golang/math/rand.norm_float_64", math_rand_norm_float_64::DEF);
    typed(r, "golang/math/rand.read", math_rand_read::DEF);
}

/// Go's `Ilogb`: the binary exponent, with Go's answers for 0, infinities and NaN.
fn ilogb(x: f64) -> i64 {
    if x == 0.0 {
        i32::MIN as i64
    } else if x.is_nan() || x.is_infinite() {
        i32::MAX as i64
    } else {
        libm::ilogb(x) as i64
    }
}

/// Go's `Logb`: [`ilogb`] as a float, -Inf for 0, +Inf for infinities.
fn logb(x: f64) -> f64 {
    if x == 0.0 {
        f64::NEG_INFINITY
    } else if x.is_infinite() {
        f64::INFINITY
    } else if x.is_nan() {
        x
    } else {
        libm::ilogb(x) as f64
    }
}

/// Go's `Dim`: `max(x - y, 0)`, NaN for NaN arguments and for Inf - Inf.
fn dim(x: f64, y: f64) -> f64 {
    let v = x - y;
    if v.is_nan() {
        f64::NAN
    } else if v <= 0.0 {
        0.0
    } else {
        v
    }
}

/// The inverse error function: a closed-form first guess refined by Newton's method on
/// `erf`, accurate to a few ulps over (-1, 1).
pub fn erfinv(x: f64) -> f64 {
    if x.is_nan() || !(-1.0..=1.0).contains(&x) {
        return f64::NAN;
    }
    if x == 1.0 {
        return f64::INFINITY;
    }
    if x == -1.0 {
        return f64::NEG_INFINITY;
    }
    if x == 0.0 {
        return x;
    }
    // The first guess: the elementary approximation with a = 0.147.
    let a = 0.147;
    let l = (1.0 - x * x).ln();
    let t = 2.0 / (std::f64::consts::PI * a) + l / 2.0;
    let mut y = ((t * t - l / a).sqrt() - t).sqrt().copysign(x);
    let two_over_sqrt_pi = 2.0 / std::f64::consts::PI.sqrt();
    for _ in 0..4 {
        let slope = two_over_sqrt_pi * (-y * y).exp();
        if slope == 0.0 {
            break;
        }
        let step = (libm::erf(y) - x) / slope;
        y -= step;
        if step.abs() <= y.abs() * f64::EPSILON {
            break;
        }
    }
    y
}

fn clamp_i32(n: i64) -> i32 {
    n.clamp(i32::MIN as i64, i32::MAX as i64) as i32
}

builtin! {
    /// +Inf when sign >= 0, -Inf otherwise
    fn math_inf(sign: i64) -> f64 {
        if sign >= 0 { f64::INFINITY } else { f64::NEG_INFINITY }
    }
}

builtin! {
    /// an IEEE 754 not-a-number
    fn math_na_n() -> f64 {
        f64::NAN
    }
}

builtin! {
    /// whether f is not-a-number
    fn math_is_na_n(f: f64) -> bool {
        f.is_nan()
    }
}

builtin! {
    /// whether f is an infinity of the sign (either when sign is 0)
    fn math_is_inf(f: f64, sign: i64) -> bool {
        (sign >= 0 && f == f64::INFINITY) || (sign <= 0 && f == f64::NEG_INFINITY)
    }
}

builtin! {
    /// whether x is negative or -0
    fn math_signbit(x: f64) -> bool {
        x.is_sign_negative()
    }
}

builtin! {
    /// the binary exponent of x as an int
    fn math_ilogb(x: f64) -> i64 {
        ilogb(x)
    }
}

builtin! {
    /// frac × 2**exp
    fn math_ldexp(frac: f64, exp: i64) -> f64 {
        libm::ldexp(frac, clamp_i32(exp))
    }
}

builtin! {
    /// 10**n (0 below -323, +Inf above 308)
    fn math_pow_10(n: i64) -> f64 {
        match n {
            ..-323 => 0.0,
            309.. => f64::INFINITY,
            // Parsing gives the correctly rounded power, as Go's table does.
            n => format!("1e{n}").parse().unwrap_or(f64::NAN),
        }
    }
}

builtin! {
    /// the order-n Bessel function of the first kind
    fn math_jn(n: i64, x: f64) -> f64 {
        libm::jn(clamp_i32(n), x)
    }
}

builtin! {
    /// the order-n Bessel function of the second kind
    fn math_yn(n: i64, x: f64) -> f64 {
        libm::yn(clamp_i32(n), x)
    }
}

builtin! {
    /// a non-negative random int
    fn math_rand_int() -> i64 {
        rand::rng().random_range(0..i64::MAX)
    }
}

builtin! {
    /// a random int in [0, n); n must be positive
    fn math_rand_intn(n: i64) -> FuncResult as "int" {
        if n <= 0 {
            return Err(FuncError::fatal("invalid argument to Intn"));
        }
        Ok(Value::Int(rand::rng().random_range(0..n)))
    }
}

builtin! {
    /// a random int in [0, 2**63)
    fn math_rand_int_63() -> i64 {
        (rand::rng().random::<u64>() >> 1) as i64
    }
}

builtin! {
    /// a random int in [0, n); n must be positive
    fn math_rand_int_63_n(n: i64) -> FuncResult as "int" {
        if n <= 0 {
            return Err(FuncError::fatal("invalid argument to Int63n"));
        }
        Ok(Value::Int(rand::rng().random_range(0..n)))
    }
}

builtin! {
    /// a random float in [0, 1)
    fn math_rand_float_64() -> f64 {
        rand::rng().random::<f64>()
    }
}

builtin! {
    /// a random float from the exponential distribution of rate 1
    fn math_rand_exp_float_64() -> f64 {
        // 1 - u is in (0, 1], so the logarithm is finite.
        -(1.0 - rand::rng().random::<f64>()).ln()
    }
}

builtin! {
    /// a random float from the standard normal distribution
    fn math_rand_norm_float_64() -> f64 {
        let mut rng = rand::rng();
        let u1 = 1.0 - rng.random::<f64>();
        let u2 = rng.random::<f64>();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

builtin! {
    /// the number of random bytes Go would write into p: its length
    fn math_rand_read(p: &str) -> i64 {
        p.len() as i64
    }
}

/// The float functions of Go's `math`: each a typed built-in, registered together.
macro_rules! float_fns {
    ($($name:literal => $module:ident($($x:ident),+) = $e:expr, $doc:literal;)*) => {
        $(
            builtin! {
                #[doc = $doc]
                fn $module($($x: f64),+) -> f64 {
                    ($e)($($x),+)
                }
            }
        )*

        fn float_fns(r: &mut Registry) {
            $(typed(r, concat!("golang/math.", $name), $module::DEF);)*
        }
    };
}

float_fns! {
    "abs" => math_abs(x) = f64::abs, "absolute value";
    "acos" => math_acos(x) = f64::acos, "arccosine, in radians";
    "acosh" => math_acosh(x) = f64::acosh, "inverse hyperbolic cosine";
    "asin" => math_asin(x) = f64::asin, "arcsine, in radians";
    "asinh" => math_asinh(x) = f64::asinh, "inverse hyperbolic sine";
    "atan" => math_atan(x) = f64::atan, "arctangent, in radians";
    "atan_2" => math_atan_2(y, x) = f64::atan2, "arctangent of y/x, using the signs of both for the quadrant";
    "atanh" => math_atanh(x) = f64::atanh, "inverse hyperbolic tangent";
    "cbrt" => math_cbrt(x) = f64::cbrt, "cube root";
    "ceil" => math_ceil(x) = f64::ceil, "rounds up";
    "copysign" => math_copysign(f, sign) = f64::copysign, "f with the sign of sign";
    "cos" => math_cos(x) = f64::cos, "cosine";
    "cosh" => math_cosh(x) = f64::cosh, "hyperbolic cosine";
    "dim" => math_dim(x, y) = dim, "max(x - y, 0)";
    "erf" => math_erf(x) = libm::erf, "error function";
    "erfc" => math_erfc(x) = libm::erfc, "complementary error function";
    "erfcinv" => math_erfcinv(x) = |x: f64| erfinv(1.0 - x), "inverse complementary error function";
    "erfinv" => math_erfinv(x) = erfinv, "inverse error function";
    "exp" => math_exp(x) = f64::exp, "e**x";
    "exp_2" => math_exp_2(x) = f64::exp2, "2**x";
    "expm_1" => math_expm_1(x) = f64::exp_m1, "e**x - 1, accurate near 0";
    "floor" => math_floor(x) = f64::floor, "rounds down";
    "fma" => math_fma(x, y, z) = f64::mul_add, "x * y + z, rounded once";
    "gamma" => math_gamma(x) = libm::tgamma, "the Gamma function";
    "hypot" => math_hypot(p, q) = f64::hypot, "sqrt(p*p + q*q)";
    "j_0" => math_j_0(x) = libm::j0, "order-zero Bessel function of the first kind";
    "j_1" => math_j_1(x) = libm::j1, "order-one Bessel function of the first kind";
    "log" => math_log(x) = f64::ln, "natural logarithm";
    "log_10" => math_log_10(x) = f64::log10, "base-10 logarithm";
    "log_1_p" => math_log_1_p(x) = f64::ln_1p, "ln(1 + x), accurate near 0";
    "log_2" => math_log_2(x) = f64::log2, "base-2 logarithm";
    "logb" => math_logb(x) = logb, "the binary exponent of x";
    "max" => math_max(x, y) = |x: f64, y: f64| if x.is_nan() || y.is_nan() { f64::NAN } else { x.max(y) }, "the larger";
    "min" => math_min(x, y) = |x: f64, y: f64| if x.is_nan() || y.is_nan() { f64::NAN } else { x.min(y) }, "the smaller";
    "mod" => math_mod(x, y) = |x: f64, y: f64| x % y, "remainder of x/y with the sign of x";
    "nextafter" => math_nextafter(x, y) = libm::nextafter, "the next float after x towards y";
    "pow" => math_pow(x, y) = f64::powf, "x**y";
    "remainder" => math_remainder(x, y) = libm::remainder, "IEEE 754 remainder of x/y";
    "round" => math_round(x) = f64::round, "rounds half away from zero";
    "round_to_even" => math_round_to_even(x) = f64::round_ties_even, "rounds half to even";
    "sin" => math_sin(x) = f64::sin, "sine";
    "sinh" => math_sinh(x) = f64::sinh, "hyperbolic sine";
    "sqrt" => math_sqrt(x) = f64::sqrt, "square root (NaN for negatives)";
    "tan" => math_tan(x) = f64::tan, "tangent";
    "tanh" => math_tanh(x) = f64::tanh, "hyperbolic tangent";
    "trunc" => math_trunc(x) = f64::trunc, "rounds toward zero";
    "y_0" => math_y_0(x) = libm::y0, "order-zero Bessel function of the second kind";
    "y_1" => math_y_1(x) = libm::y1, "order-one Bessel function of the second kind";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erfinv_inverts_erf_across_the_range() {
        for x in [-0.999_999, -0.9, -0.5, -1e-9, 1e-9, 0.1, 0.5, 0.9, 0.999, 0.999_999_9] {
            let y = erfinv(x);
            assert!((libm::erf(y) - x).abs() <= 4.0 * f64::EPSILON, "erf(erfinv({x})) = {}", libm::erf(y));
        }
        assert_eq!(erfinv(1.0), f64::INFINITY);
        assert!(erfinv(1.5).is_nan());
    }

    #[test]
    fn exponent_functions_answer_as_go_does() {
        assert_eq!(ilogb(8.0), 3);
        assert_eq!(ilogb(0.0), i32::MIN as i64);
        assert_eq!(ilogb(f64::NAN), i32::MAX as i64);
        assert_eq!(logb(0.0), f64::NEG_INFINITY);
        assert_eq!(logb(0.25), -2.0);
        assert_eq!(dim(3.0, 5.0), 0.0);
        assert!(dim(f64::INFINITY, f64::INFINITY).is_nan());
    }
}
