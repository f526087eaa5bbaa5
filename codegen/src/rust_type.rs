//! The Rust types a spec names (`payload`, `yields`): a small grammar of type paths.
//!
//! Accepted: identifiers separated by `::` (`Response`, `crate::io::RequestId`), the last one
//! optionally with generic arguments that are themselves such types (`Option<Foo>`,
//! `Box<a::B>`, `Result<A, B>`). `crate`, `self` and `super` may only lead a path. Nothing else:
//! no references, tuples, arrays, lifetimes, `dyn` or `impl`. A type is compared with others by its
//! canonical text ([`TypePath`]'s `Display`: no spaces but `", "` between arguments), so
//! `Option< Foo >` and `Option<Foo>` are the same type.

use std::fmt;

use crate::ir::camel_case;

/// A parsed type path.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TypePath {
    /// The path's segments (`["crate", "io", "RequestId"]`).
    pub segments: Vec<String>,
    /// The generic arguments of the last segment (empty without `<...>`).
    pub args: Vec<TypePath>,
}

impl fmt::Display for TypePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.segments.join("::"))?;
        if !self.args.is_empty() {
            f.write_str("<")?;
            for (i, a) in self.args.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{a}")?;
            }
            f.write_str(">")?;
        }
        Ok(())
    }
}

impl TypePath {
    /// A CamelCase name made of the last segment and the arguments' names, for an enum variant
    /// holding the type (`RequestId` → `RequestId`, `Option<a::Foo>` → `OptionFoo`).
    pub fn short_name(&self) -> String {
        let last = self.segments.last().map_or("", String::as_str);
        let mut out = camel_case(last);
        for a in &self.args {
            out.push_str(&a.short_name());
        }
        out
    }

    /// Like [`TypePath::short_name`] but with every segment (`a::Foo` → `AFoo`).
    pub fn long_name(&self) -> String {
        let mut out: String = self.segments.iter().map(|s| camel_case(s)).collect();
        for a in &self.args {
            out.push_str(&a.long_name());
        }
        out
    }
}

/// Words that are keywords but may lead a path.
const PATH_ROOTS: &[&str] = &["crate", "self", "super"];

/// Parses a type string of the spec, or says why it is not one.
pub fn parse(text: &str) -> Result<TypePath, String> {
    let mut p = Parser { text, pos: 0 };
    p.skip_spaces();
    if p.at_end() {
        return Err("it is empty".to_owned());
    }
    let ty = p.path()?;
    p.skip_spaces();
    if !p.at_end() {
        return Err(format!("unexpected `{}`", p.rest()));
    }
    Ok(ty)
}

/// A cursor over the type text.
struct Parser<'a> {
    text: &'a str,
    pos: usize,
}

impl Parser<'_> {
    fn rest(&self) -> &str {
        &self.text[self.pos..]
    }

    fn at_end(&self) -> bool {
        self.pos >= self.text.len()
    }

    fn skip_spaces(&mut self) {
        let rest = self.rest();
        self.pos += rest.len() - rest.trim_start_matches(' ').len();
    }

    /// Consumes `token` (after spaces) if it comes next.
    fn eat(&mut self, token: &str) -> bool {
        self.skip_spaces();
        if self.rest().starts_with(token) {
            self.pos += token.len();
            true
        } else {
            false
        }
    }

    /// `ident (:: ident)* (< path (, path)* >)?`
    fn path(&mut self) -> Result<TypePath, String> {
        let mut segments = vec![self.ident(true)?];
        while self.eat("::") {
            segments.push(self.ident(false)?);
        }
        let mut args = Vec::new();
        if self.eat("<") {
            loop {
                args.push(self.path()?);
                if self.eat(",") {
                    continue;
                }
                if self.eat(">") {
                    break;
                }
                return Err(self.expected("`,` or `>`"));
            }
        }
        Ok(TypePath { segments, args })
    }

    /// One identifier; `first` allows `crate`, `self` and `super`.
    fn ident(&mut self, first: bool) -> Result<String, String> {
        self.skip_spaces();
        let rest = self.rest();
        let len = rest
            .char_indices()
            .find(|&(i, c)| !(c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit())))
            .map_or(rest.len(), |(i, _)| i);
        let word = rest[..len].to_owned();
        if word.is_empty() || word == "_" {
            return Err(self.expected("an identifier"));
        }
        let root = PATH_ROOTS.contains(&word.as_str());
        let leading_super =
            word == "super" && self.text[..self.pos].trim_end().ends_with("super::");
        if crate::validate::names::is_keyword(&word) && !(root && (first || leading_super)) {
            return Err(format!("`{word}` is a keyword"));
        }
        self.pos += len;
        Ok(word)
    }

    fn expected(&self, what: &str) -> String {
        match self.rest().chars().next() {
            Some(c) => format!("expected {what}, found `{c}`"),
            None => format!("expected {what} at the end"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> String {
        parse(text).unwrap().to_string()
    }

    #[test]
    fn paths_and_generics_parse_to_canonical_text() {
        assert_eq!(ok("Response"), "Response");
        assert_eq!(ok(" crate::io::RequestId "), "crate::io::RequestId");
        assert_eq!(ok("Option< Foo >"), "Option<Foo>");
        assert_eq!(ok("Result<a::B,C>"), "Result<a::B, C>");
        assert_eq!(ok("Box<Option<X1>>"), "Box<Option<X1>>");
        assert_eq!(ok("super::super::T"), "super::super::T");
        assert_eq!(ok("self::T"), "self::T");
    }

    #[test]
    fn everything_else_is_rejected() {
        for bad in [
            "", "  ", "&Foo", "(A, B)", "[u8; 4]", "Foo<'a>", "dyn Foo", "a::", "::a", "a b",
            "Foo<", "Foo<>", "Foo<A,>", "9a", "a-b", "fn", "a::crate", "Foo::<A>", "_", "Self",
            "a::super",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn names_for_variants() {
        let t = parse("Option<a::Foo>").unwrap();
        assert_eq!(t.short_name(), "OptionFoo");
        assert_eq!(t.long_name(), "OptionAFoo");
        assert_eq!(parse("server_id").unwrap().short_name(), "ServerId");
    }
}
