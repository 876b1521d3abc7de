//! The command line: `--name value`, `--name=value` and flags, checked
//! against each command's list; anything else is one clear error.
use crate::fail;
use std::collections::{HashMap, HashSet};

pub struct Opts {
    pub positional: Vec<String>,
    values: HashMap<&'static str, String>,
    flags: HashSet<&'static str>,
}

pub fn parse(cmd: &str, args: &[String], valued: &[&'static str], flags: &[&'static str]) -> Opts {
    let mut o = Opts { positional: Vec::new(), values: HashMap::new(), flags: HashSet::new() };
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        let Some(body) = a.strip_prefix("--") else {
            if a.starts_with('-') && a.len() > 1 && a.parse::<f64>().is_err() {
                fail(format!("{cmd}: unknown option {a}"));
            }
            o.positional.push(a.clone());
            continue;
        };
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (body, None),
        };
        if let Some(&key) = valued.iter().find(|k| **k == name) {
            let v = match inline {
                Some(v) => v,
                None if i < args.len() => {
                    i += 1;
                    args[i - 1].clone()
                }
                None => fail(format!("{cmd}: option --{name} needs a value")),
            };
            o.values.insert(key, v);
        } else if let Some(&key) = flags.iter().find(|k| **k == name) {
            if inline.is_some() {
                fail(format!("{cmd}: option --{name} takes no value"));
            }
            o.flags.insert(key);
        } else {
            let mut known: Vec<&str> = valued.iter().chain(flags.iter()).copied().collect();
            known.sort_unstable();
            fail(format!("{cmd}: unknown option {a} (known: --{})", known.join(", --")));
        }
    }
    o
}

impl Opts {
    pub fn str(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    pub fn flag(&self, name: &str) -> bool {
        self.flags.contains(name)
    }

    pub fn int(&self, name: &str) -> Option<i64> {
        self.str(name).map(|v| {
            v.parse::<i64>().unwrap_or_else(|_| fail(format!("--{name} expects an integer, got '{v}'")))
        })
    }

    pub fn float(&self, name: &str) -> Option<f64> {
        self.str(name).map(|v| match v.parse::<f64>() {
            Ok(x) if x.is_finite() => x,
            _ => fail(format!("--{name} expects a finite number, got '{v}'")),
        })
    }

    /// An integer option that must be at least `min` when given.
    pub fn int_min(&self, name: &str, min: i64) -> Option<i64> {
        let v = self.int(name);
        if let Some(x) = v {
            if x < min {
                fail(format!("--{name} must be at least {min}"));
            }
        }
        v
    }

    /// The one positional argument (the model), or an error naming the command.
    pub fn model(&self, cmd: &str) -> &str {
        match self.positional.as_slice() {
            [m] => m,
            [] => fail(format!("{cmd}: which model? (known: {})", crate::models::Arch::NAMES.join(", "))),
            [_, extra, ..] => fail(format!("{cmd}: unexpected argument {extra}")),
        }
    }

    /// --device: this binding runs on the CPU only.
    pub fn check_device(&self) {
        if let Some(d) = self.str("device") {
            if d != "cpu" {
                fail(format!("device {d} is not supported by this binding (cpu only)"));
            }
        }
    }
}
