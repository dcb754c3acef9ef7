//! Generated mcl programs for benchmarks (large, valid, and shaped like real code) and for
//! the hostile tests (chains nested past what the front end allows).

use std::fmt::Write;

/// A program of about `lines` lines mixing the common constructs: a class with a
/// printf, lists mapped by lambdas, includes, file resources. It compiles with no error
/// and no warning.
pub fn mixed(lines: usize) -> String {
    let mut s = String::from("import \"fmt\"\nimport \"iter\"\n\n");
    s.push_str("class svc($name, $port int) {\n\t$addr = fmt.printf(\"%s:%d\", $name, $port)\n");
    s.push_str("\tfile \"/tmp/tend-bench/${name}\" {\n\t\tcontent => $addr,\n\t}\n}\n\n");
    let mut i = 0;
    while s.lines().count() < lines {
        let _ = write!(
            s,
            "$l{i} = [{i}, {a}, {b},]\n\
             $m{i} = iter.map($l{i}, func($x) {{ $x + {i} }})\n\
             $s{i} = fmt.printf(\"%d-%s\", len($m{i}), \"x{i}\")\n\
             include svc(\"s{i}\", {i})\n\
             file \"/tmp/tend-bench/f{i}\" {{\n\
             \tcontent => $s{i},\n\
             \tmode => \"0644\",\n\
             }}\n",
            a = i + 1,
            b = i + 2,
        );
        i += 1;
    }
    // The multi-line list rule needs the elements on their own lines; keep it single-line.
    s.replace(",]", "]")
}

/// A chain of `depth` classes, each including the next, and `include c0`.
pub fn include_chain(depth: usize) -> String {
    let mut text: String = (0..depth).map(|i| format!("class c{i} {{\n\tinclude c{}\n}}\n", i + 1)).collect();
    text.push_str(&format!("class c{depth} {{\n\tprint \"end\" {{}}\n}}\ninclude c0\n"));
    text
}

/// A chain of `depth` funcs, each calling the one before, and a call of the last.
pub fn call_chain(depth: usize) -> String {
    let mut text = String::from("func f0($x) {\n\t$x\n}\n");
    text.extend((1..depth).map(|i| format!("func f{i}($x) {{\n\tf{}($x)\n}}\n", i - 1)));
    text.push_str(&format!("print \"p\" {{\n\tmsg => f{}(\"end\"),\n}}\n", depth - 1));
    text
}
