//! A reader for the BIF files of the bnlearn repository (`variable ... { type discrete [k] {...} }`,
//! `probability ( child | parents ) { (states) p...; }` or `table p...;` for nodes without
//! parents), for the runner without R; R itself reads BIF with bnlearn's `read.bif`.

use std::collections::HashMap;

use crate::error::{JtError, Result};
use crate::network::Network;

fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '/' && chars.peek() == Some(&'/') {
            for d in chars.by_ref() {
                if d == '\n' {
                    break;
                }
            }
            continue;
        }
        if c.is_whitespace() || c == ',' || "{}()[];|".contains(c) {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            if !c.is_whitespace() && c != ',' {
                out.push(c.to_string());
            }
        } else {
            cur.push(c);
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

struct Cursor {
    t: Vec<String>,
    i: usize,
}

impl Cursor {
    fn next(&mut self) -> Result<String> {
        let s = self.t.get(self.i).cloned().ok_or_else(|| JtError::Bif("unexpected end of file".into()))?;
        self.i += 1;
        Ok(s)
    }
    fn peek(&self) -> Option<&str> {
        self.t.get(self.i).map(|s| s.as_str())
    }
    fn expect(&mut self, s: &str) -> Result<()> {
        let got = self.next()?;
        if got != s {
            return Err(JtError::Bif(format!("expected '{s}', found '{got}'")));
        }
        Ok(())
    }
    fn until(&mut self, end: &str) -> Result<Vec<String>> {
        let mut v = Vec::new();
        loop {
            let s = self.next()?;
            if s == end {
                return Ok(v);
            }
            v.push(s);
        }
    }
    fn skip_block(&mut self) -> Result<()> {
        self.expect("{")?;
        let mut depth = 1;
        while depth > 0 {
            match self.next()?.as_str() {
                "{" => depth += 1,
                "}" => depth -= 1,
                _ => {}
            }
        }
        Ok(())
    }
}

fn number(s: &str) -> Result<f64> {
    s.parse::<f64>().map_err(|_| JtError::Bif(format!("'{s}' is not a number")))
}

/// Parses BIF text into a network.
pub fn parse_bif(text: &str) -> Result<Network> {
    let mut c = Cursor { t: tokens(text), i: 0 };
    let mut names = Vec::new();
    let mut states: Vec<Vec<String>> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut tables: Vec<Option<(Vec<usize>, Vec<f64>)>> = Vec::new();
    while let Some(kw) = c.peek().map(|s| s.to_string()) {
        c.i += 1;
        match kw.as_str() {
            "network" => {
                c.next()?;
                c.skip_block()?;
            }
            "variable" => {
                let name = c.next()?;
                c.expect("{")?;
                let mut st = None;
                loop {
                    let s = c.next()?;
                    match s.as_str() {
                        "}" => break,
                        "type" => {
                            c.expect("discrete")?;
                            c.expect("[")?;
                            let k: usize = c.next()?.parse().map_err(|_| JtError::Bif(format!("bad state count of '{name}'")))?;
                            c.expect("]")?;
                            c.expect("{")?;
                            let v = c.until("}")?;
                            c.expect(";")?;
                            if v.len() != k {
                                return Err(JtError::Bif(format!("'{name}' declares {k} states and lists {}", v.len())));
                            }
                            st = Some(v);
                        }
                        _ => {
                            c.until(";")?;
                        }
                    }
                }
                let st = st.ok_or_else(|| JtError::Bif(format!("variable '{name}' has no discrete type")))?;
                if index.insert(name.clone(), names.len()).is_some() {
                    return Err(JtError::Bif(format!("variable '{name}' is declared twice")));
                }
                names.push(name);
                states.push(st);
                tables.push(None);
            }
            "probability" => {
                c.expect("(")?;
                let vars = c.until(")")?;
                let lookup = |n: &str| index.get(n).copied().ok_or_else(|| JtError::Bif(format!("unknown variable '{n}'")));
                let child = lookup(vars.first().map(|s| s.as_str()).unwrap_or(""))?;
                let parents: Vec<usize> = if vars.len() > 1 {
                    if vars[1] != "|" {
                        return Err(JtError::Bif(format!("expected '|' after '{}'", vars[0])));
                    }
                    vars[2..].iter().map(|n| lookup(n)).collect::<Result<_>>()?
                } else {
                    Vec::new()
                };
                let k = states[child].len();
                let rows: usize = parents.iter().map(|&p| states[p].len()).product();
                let mut cpt = vec![f64::NAN; rows * k];
                c.expect("{")?;
                loop {
                    let s = c.next()?;
                    match s.as_str() {
                        "}" => break,
                        "table" => {
                            if !parents.is_empty() {
                                return Err(JtError::Bif(format!("a 'table' entry for '{}', which has parents, is not supported", names[child])));
                            }
                            let v = c.until(";")?;
                            if v.len() != k {
                                return Err(JtError::Bif(format!("the table of '{}' has {} values", names[child], v.len())));
                            }
                            for (j, x) in v.iter().enumerate() {
                                cpt[j] = number(x)?;
                            }
                        }
                        "(" => {
                            let ps = c.until(")")?;
                            if ps.len() != parents.len() {
                                return Err(JtError::Bif(format!("a row of '{}' names {} parent states", names[child], ps.len())));
                            }
                            let mut row = 0usize;
                            let mut stride = 1usize;
                            for (&p, st) in parents.iter().zip(&ps) {
                                let s = states[p].iter().position(|x| x == st).ok_or_else(|| {
                                    JtError::Bif(format!("'{st}' is not a state of '{}'", names[p]))
                                })?;
                                row += s * stride;
                                stride *= states[p].len();
                            }
                            let v = c.until(";")?;
                            if v.len() != k {
                                return Err(JtError::Bif(format!("a row of '{}' has {} values", names[child], v.len())));
                            }
                            for (j, x) in v.iter().enumerate() {
                                cpt[row * k + j] = number(x)?;
                            }
                        }
                        other => return Err(JtError::Bif(format!("unsupported entry '{other}' in the table of '{}'", names[child]))),
                    }
                }
                if cpt.iter().any(|x| x.is_nan()) {
                    return Err(JtError::Bif(format!("the table of '{}' is incomplete", names[child])));
                }
                tables[child] = Some((parents, cpt));
            }
            other => return Err(JtError::Bif(format!("unexpected '{other}'"))),
        }
    }
    let mut parents = Vec::new();
    let mut cpts = Vec::new();
    for (v, t) in tables.into_iter().enumerate() {
        let (p, cpt) = t.ok_or_else(|| JtError::Bif(format!("no probability table for '{}'", names[v])))?;
        parents.push(p);
        cpts.push(cpt);
    }
    Network::new(names, states, parents, cpts)
}
