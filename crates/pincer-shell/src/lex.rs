//! The lexer and the part splitter of the shell classifier.
//!
//! [`lex`] turns a command line into words, operators and redirections the
//! way a POSIX shell (with the bash extensions agents use) would, keeping
//! what the classifier needs: each word's value after quote removal, whether
//! an expansion can change it at run time, and the source of every command
//! or process substitution inside it (classified separately by the caller).
//! [`split`] turns the tokens into simple commands, in order, seeing through
//! `( … )`, `{ …; }`, `if`/`while`/`for` and function definitions.
//!
//! Both refuse what they do not understand with a message; the caller turns
//! that into "could not be parsed" at high risk.

/// How deep substitutions and `${ … }` may nest while lexing one string.
const MAX_NEST: usize = 32;

/// One shell word.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Word {
    /// The value after quote removal; expansions are kept as written
    /// (`$HOME`, `$(…)`), since their value is unknown here.
    pub lit: String,
    /// Char offsets of the word in the string that was lexed.
    pub start: usize,
    pub end: usize,
    /// A parameter, arithmetic or command expansion can change the value.
    pub dynamic: bool,
    /// Some part was quoted or escaped (so it is never a reserved word).
    pub quoted: bool,
    /// An unquoted `*`, `?` or `[` (pathname expansion may rewrite it).
    pub glob: bool,
    /// Sources of `$( … )`, `` ` … ` ``, `<( … )` and `>( … )` inside it.
    pub subs: Vec<String>,
    /// Quoted text that looks like a substitution (`'$(rm x)'`): inert
    /// here, but code if a later expansion evaluates it (arithmetic on
    /// `a[$(…)]`, `${x@P}`, `eval`).
    pub code_text: bool,
    /// A `${x@P}` prompt expansion, which runs substitutions in `x`'s value.
    pub reeval: bool,
    /// Byte index in `lit` of the first quoted or escaped character.
    first_quoted: Option<usize>,
}

impl Word {
    /// A word with the given value, as a program reads it from an option
    /// (`-oFILE` gives `FILE`); it stays dynamic if its source was.
    pub fn derived(lit: &str, from: &Word) -> Word {
        Word {
            lit: lit.to_string(),
            dynamic: from.dynamic,
            glob: from.glob,
            quoted: from.quoted,
            ..Word::default()
        }
    }
}

impl Word {
    fn push(&mut self, c: char) {
        self.lit.push(c);
    }

    fn push_quoted(&mut self, c: char) {
        self.mark_quoted();
        self.lit.push(c);
    }

    /// Sets `code_text` when the quoted text since `from` looks like a
    /// substitution.
    fn note_code_text(&mut self, from: usize) {
        let seg = self.lit.get(from..).unwrap_or("");
        if seg.contains("$(") || seg.contains('`') {
            self.code_text = true;
        }
    }

    fn mark_quoted(&mut self) {
        self.quoted = true;
        if self.first_quoted.is_none() {
            self.first_quoted = Some(self.lit.len());
        }
    }

    /// `NAME` when this word is an assignment `NAME=…`, `NAME+=…` or
    /// `NAME[i]=…` (the name part unquoted, as the shell requires).
    pub fn assignment(&self) -> Option<&str> {
        let eq = self.lit.find('=')?;
        if self.first_quoted.is_some_and(|q| q < eq) {
            return None;
        }
        let mut name = &self.lit[..eq];
        name = name.strip_suffix('+').unwrap_or(name);
        if let Some(open) = name.find('[') {
            if !name.ends_with(']') {
                return None;
            }
            name = &name[..open];
        }
        is_name(name).then_some(name)
    }

    /// The word is exactly `NAME=` (an array assignment may follow).
    fn is_array_prefix(&self) -> bool {
        self.first_quoted.is_none()
            && self
                .lit
                .strip_suffix('=')
                .map(|n| n.strip_suffix('+').unwrap_or(n))
                .is_some_and(is_name)
    }
}

/// A shell variable name.
pub(super) fn is_name(s: &str) -> bool {
    let mut cs = s.chars();
    cs.next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && cs.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    Semi,
    Newline,
    Amp,
    AndIf,
    OrIf,
    Pipe,
    PipeAmp,
    LParen,
    RParen,
    DSemi,
}

impl Op {
    fn as_str(self) -> &'static str {
        match self {
            Op::Semi => ";",
            Op::Newline => "newline",
            Op::Amp => "&",
            Op::AndIf => "&&",
            Op::OrIf => "||",
            Op::Pipe => "|",
            Op::PipeAmp => "|&",
            Op::LParen => "(",
            Op::RParen => ")",
            Op::DSemi => ";;",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RedirKind {
    /// `<` from a file.
    Read,
    /// `>`, `>>`, `>|`, `&>`, `&>>`, `<>`, `>&file`: writes the target.
    Write,
    /// `>&2`, `2>&1`, `<&0`, `>&-`: duplicates or closes a descriptor.
    Dup,
    /// `<<` / `<<-`: the target is the delimiter.
    HereDoc,
    /// `<<<`: the target is the string.
    HereString,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Redir {
    pub kind: RedirKind,
    pub op: &'static str,
    pub target: Word,
    /// Substitutions in an unquoted here-document's body.
    pub body_subs: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum TokKind {
    Word(Word),
    Op(Op),
    Redir(Redir),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Tok {
    pub kind: TokKind,
    pub start: usize,
    pub end: usize,
}

struct PendingHereDoc {
    tok: usize,
    delim: String,
    strip_tabs: bool,
    expand: bool,
}

/// Lexes a whole command line.
pub(super) fn lex(src: &[char]) -> Result<Vec<Tok>, String> {
    let mut lx = Lexer::new(src, 0, 0);
    lx.run(false)?;
    Ok(lx.toks)
}

struct Lexer<'s> {
    s: &'s [char],
    i: usize,
    nest: usize,
    toks: Vec<Tok>,
    heredocs: Vec<PendingHereDoc>,
}

fn is_meta(c: char) -> bool {
    matches!(
        c,
        ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')'
    )
}

impl<'s> Lexer<'s> {
    fn new(s: &'s [char], i: usize, nest: usize) -> Self {
        Lexer {
            s,
            i,
            nest,
            toks: Vec::new(),
            heredocs: Vec::new(),
        }
    }

    fn at(&self, k: usize) -> Option<char> {
        self.s.get(self.i + k).copied()
    }

    fn text(&self, from: usize, to: usize) -> String {
        self.s[from.min(self.s.len())..to.min(self.s.len())]
            .iter()
            .collect()
    }

    fn op(&mut self, op: Op, start: usize, len: usize) {
        self.i += len;
        self.toks.push(Tok {
            kind: TokKind::Op(op),
            start,
            end: self.i,
        });
    }

    /// Lexes to the end, or with `close` to the `)` that ends the
    /// substitution being read; returns the position of the end.
    fn run(&mut self, close: bool) -> Result<usize, String> {
        let mut depth = 0usize;
        loop {
            let Some(c) = self.at(0) else {
                if close {
                    return Err("unterminated `$(`".into());
                }
                if depth > 0 {
                    return Err("unclosed `(`".into());
                }
                return Ok(self.i);
            };
            let start = self.i;
            match c {
                ' ' | '\t' => self.i += 1,
                '\n' => {
                    self.op(Op::Newline, start, 1);
                    self.read_heredocs()?;
                }
                '#' => {
                    while self.at(0).is_some_and(|c| c != '\n') {
                        self.i += 1;
                    }
                }
                '\\' if self.at(1) == Some('\n') => self.i += 2,
                ';' if self.at(1) == Some(';') => self.op(Op::DSemi, start, 2),
                ';' => self.op(Op::Semi, start, 1),
                '&' if self.at(1) == Some('&') => self.op(Op::AndIf, start, 2),
                '&' if self.at(1) == Some('>') => self.redirect(start)?,
                '&' => self.op(Op::Amp, start, 1),
                '|' if self.at(1) == Some('|') => self.op(Op::OrIf, start, 2),
                '|' if self.at(1) == Some('&') => self.op(Op::PipeAmp, start, 2),
                '|' => self.op(Op::Pipe, start, 1),
                '(' => {
                    depth += 1;
                    self.op(Op::LParen, start, 1);
                }
                ')' => {
                    if depth == 0 {
                        if close {
                            return Ok(self.i);
                        }
                        return Err("unbalanced `)`".into());
                    }
                    depth -= 1;
                    self.op(Op::RParen, start, 1);
                }
                '<' | '>' if self.at(1) == Some('(') => {
                    let mut w = Word {
                        start,
                        ..Word::default()
                    };
                    self.process_sub(&mut w)?;
                    self.word_into(&mut w)?;
                    w.end = self.i;
                    self.push_word(w);
                }
                '<' | '>' => self.redirect(start)?,
                _ => {
                    let w = self.word()?;
                    let fd = !w.quoted
                        && !w.lit.is_empty()
                        && w.lit.chars().all(|c| c.is_ascii_digit())
                        && matches!(self.at(0), Some('<' | '>'))
                        && self.at(1) != Some('(');
                    if fd {
                        self.redirect(start)?;
                    } else {
                        self.push_word(w);
                    }
                }
            }
        }
    }

    fn push_word(&mut self, w: Word) {
        let (start, end) = (w.start, w.end);
        self.toks.push(Tok {
            kind: TokKind::Word(w),
            start,
            end,
        });
    }

    /// A redirection operator at `self.i` and its target word.
    fn redirect(&mut self, start: usize) -> Result<(), String> {
        let three: String = (0..3).filter_map(|k| self.at(k)).collect();
        let (op, kind): (&'static str, RedirKind) = if three.starts_with("&>>") {
            ("&>>", RedirKind::Write)
        } else if three.starts_with("&>") {
            ("&>", RedirKind::Write)
        } else if three.starts_with("<<<") {
            ("<<<", RedirKind::HereString)
        } else if three.starts_with("<<-") {
            ("<<-", RedirKind::HereDoc)
        } else if three.starts_with("<<") {
            ("<<", RedirKind::HereDoc)
        } else if three.starts_with("<&") {
            ("<&", RedirKind::Dup)
        } else if three.starts_with("<>") {
            ("<>", RedirKind::Write)
        } else if three.starts_with('<') {
            ("<", RedirKind::Read)
        } else if three.starts_with(">>") {
            (">>", RedirKind::Write)
        } else if three.starts_with(">|") {
            (">|", RedirKind::Write)
        } else if three.starts_with(">&") {
            (">&", RedirKind::Dup)
        } else {
            (">", RedirKind::Write)
        };
        self.i += op.chars().count();
        while matches!(self.at(0), Some(' ' | '\t')) {
            self.i += 1;
        }
        match self.at(0) {
            None => return Err(format!("redirection `{op}` has no target")),
            Some(c) if is_meta(c) && !(matches!(c, '<' | '>') && self.at(1) == Some('(')) => {
                return Err(format!("redirection `{op}` has no target"));
            }
            Some(_) => {}
        }
        let mut target = Word {
            start: self.i,
            ..Word::default()
        };
        if matches!(self.at(0), Some('<' | '>')) {
            self.process_sub(&mut target)?;
        }
        self.word_into(&mut target)?;
        target.end = self.i;
        let kind = match kind {
            RedirKind::Dup if !is_fd_dup(&target) => {
                if op == ">&" {
                    RedirKind::Write
                } else {
                    RedirKind::Read
                }
            }
            k => k,
        };
        if kind == RedirKind::HereDoc {
            self.heredocs.push(PendingHereDoc {
                tok: self.toks.len(),
                delim: target.lit.clone(),
                strip_tabs: op == "<<-",
                expand: !target.quoted,
            });
        }
        self.toks.push(Tok {
            kind: TokKind::Redir(Redir {
                kind,
                op,
                target,
                body_subs: Vec::new(),
            }),
            start,
            end: self.i,
        });
        Ok(())
    }

    /// Reads the bodies of here-documents whose line just ended.
    fn read_heredocs(&mut self) -> Result<(), String> {
        for doc in std::mem::take(&mut self.heredocs) {
            let body_start = self.i;
            let mut body_end = self.i;
            while self.i < self.s.len() {
                let line_start = self.i;
                while self.at(0).is_some_and(|c| c != '\n') {
                    self.i += 1;
                }
                let mut line = self.text(line_start, self.i);
                if doc.strip_tabs {
                    line = line.trim_start_matches('\t').to_string();
                }
                let at_end = self.i >= self.s.len();
                if !at_end {
                    self.i += 1; // the newline
                }
                if line == doc.delim {
                    break;
                }
                body_end = self.i;
            }
            if doc.expand {
                let mut scratch = Word::default();
                let resume = self.i;
                self.scan_expansions(body_start, body_end, &mut scratch)?;
                self.i = resume;
                if let Some(Tok {
                    kind: TokKind::Redir(r),
                    ..
                }) = self.toks.get_mut(doc.tok)
                {
                    r.body_subs = scratch.subs;
                }
            }
        }
        Ok(())
    }

    /// Finds substitutions in `from..to` where quotes are literal (a
    /// here-document body, an arithmetic expression).
    fn scan_expansions(&mut self, from: usize, to: usize, w: &mut Word) -> Result<(), String> {
        self.i = from;
        while self.i < to {
            match self.at(0) {
                Some('\\') => self.i += 2,
                Some('$') => self.dollar(w, true)?,
                Some('`') => self.backtick(w)?,
                _ => self.i += 1,
            }
        }
        Ok(())
    }

    fn word(&mut self) -> Result<Word, String> {
        let mut w = Word {
            start: self.i,
            ..Word::default()
        };
        self.word_into(&mut w)?;
        w.end = self.i;
        Ok(w)
    }

    fn word_into(&mut self, w: &mut Word) -> Result<(), String> {
        while let Some(c) = self.at(0) {
            match c {
                '(' if w.is_array_prefix() => self.array(w)?,
                c if is_meta(c) => break,
                '\\' => match self.at(1) {
                    None => {
                        w.push('\\');
                        self.i += 1;
                    }
                    Some('\n') => self.i += 2,
                    Some(n) => {
                        w.push_quoted(n);
                        self.i += 2;
                    }
                },
                '\'' => self.single(w)?,
                '"' => self.double(w)?,
                '$' => self.dollar(w, false)?,
                '`' => self.backtick(w)?,
                '*' | '?' | '[' => {
                    w.glob = true;
                    w.push(c);
                    self.i += 1;
                }
                _ => {
                    w.push(c);
                    self.i += 1;
                }
            }
        }
        Ok(())
    }

    fn enter(&mut self) -> Result<(), String> {
        self.nest += 1;
        if self.nest > MAX_NEST {
            return Err(format!("substitutions nested more than {MAX_NEST} deep"));
        }
        Ok(())
    }

    /// Lexes a nested command list from `self.i` to its closing `)`;
    /// returns its source and leaves `self.i` after the `)`.
    fn nested(&mut self) -> Result<(String, Vec<Tok>), String> {
        self.enter()?;
        let mut sub = Lexer::new(self.s, self.i, self.nest);
        let end = sub.run(true)?;
        let inner = self.text(self.i, end);
        self.i = end + 1;
        self.nest -= 1;
        Ok((inner, sub.toks))
    }

    /// `<( … )` or `>( … )` at `self.i`.
    fn process_sub(&mut self, w: &mut Word) -> Result<(), String> {
        let start = self.i;
        self.i += 2;
        let (inner, _) = self.nested()?;
        w.subs.push(inner);
        w.dynamic = true;
        w.lit.push_str(&self.text(start, self.i));
        Ok(())
    }

    /// `NAME=( … )`: the elements are words; substitutions in them count.
    fn array(&mut self, w: &mut Word) -> Result<(), String> {
        let start = self.i;
        self.i += 1;
        let (_, toks) = self.nested()?;
        for t in toks {
            match t.kind {
                TokKind::Word(x) => {
                    w.subs.extend(x.subs);
                    w.dynamic |= x.dynamic;
                }
                TokKind::Op(Op::Newline) => {}
                _ => return Err("unexpected operator in an array assignment".into()),
            }
        }
        w.lit.push_str(&self.text(start, self.i));
        Ok(())
    }

    fn single(&mut self, w: &mut Word) -> Result<(), String> {
        w.mark_quoted();
        self.i += 1;
        let from = w.lit.len();
        loop {
            match self.at(0) {
                None => return Err("unterminated single quote".into()),
                Some('\'') => {
                    self.i += 1;
                    w.note_code_text(from);
                    return Ok(());
                }
                Some(c) => {
                    w.push_quoted(c);
                    self.i += 1;
                }
            }
        }
    }

    fn double(&mut self, w: &mut Word) -> Result<(), String> {
        self.enter()?;
        w.mark_quoted();
        self.i += 1;
        loop {
            match self.at(0) {
                None => return Err("unterminated double quote".into()),
                Some('"') => {
                    self.i += 1;
                    self.nest -= 1;
                    return Ok(());
                }
                Some('\\') => match self.at(1) {
                    Some('\n') => self.i += 2,
                    Some(n @ ('$' | '`' | '"' | '\\')) => {
                        if n == '`' || (n == '$' && self.at(2) == Some('(')) {
                            w.code_text = true;
                        }
                        w.push_quoted(n);
                        self.i += 2;
                    }
                    _ => {
                        w.push_quoted('\\');
                        self.i += 1;
                    }
                },
                Some('$') => self.dollar(w, true)?,
                Some('`') => self.backtick(w)?,
                Some(c) => {
                    w.push_quoted(c);
                    self.i += 1;
                }
            }
        }
    }

    /// `$…` at `self.i`: an expansion, ANSI-C or locale quoting, or a `$`.
    fn dollar(&mut self, w: &mut Word, in_dq: bool) -> Result<(), String> {
        let start = self.i;
        match self.at(1) {
            Some('(') if self.at(2) == Some('(') => return self.arith(w),
            Some('(') => return self.command_sub(w),
            Some('{') => return self.param(w, in_dq),
            Some('\'') if !in_dq => return self.ansi_c(w),
            Some('"') if !in_dq => {
                self.i += 1;
                return self.double(w);
            }
            Some(c) if c == '_' || c.is_ascii_alphabetic() => {
                self.i += 1;
                while self
                    .at(0)
                    .is_some_and(|c| c == '_' || c.is_ascii_alphanumeric())
                {
                    self.i += 1;
                }
                w.dynamic = true;
            }
            Some(c) if c.is_ascii_digit() || "@*#?$!-".contains(c) => {
                self.i += 2;
                w.dynamic = true;
            }
            _ => {
                self.i += 1;
                if in_dq {
                    w.push_quoted('$');
                } else {
                    w.push('$');
                }
                return Ok(());
            }
        }
        w.lit.push_str(&self.text(start, self.i));
        Ok(())
    }

    fn command_sub(&mut self, w: &mut Word) -> Result<(), String> {
        let start = self.i;
        self.i += 2;
        let (inner, _) = self.nested()?;
        w.subs.push(inner);
        w.dynamic = true;
        w.lit.push_str(&self.text(start, self.i));
        Ok(())
    }

    /// `$(( … ))`; like bash, `$((cmd) …)` whose parens do not close as
    /// `))` is a command substitution of a subshell instead.
    fn arith(&mut self, w: &mut Word) -> Result<(), String> {
        let start = self.i;
        let mut j = start + 3;
        let mut depth = 0usize;
        let close = loop {
            match self.s.get(j) {
                None => return Err("unterminated `$((`".into()),
                Some('(') => depth += 1,
                Some(')') if depth == 0 => break j,
                Some(')') => depth -= 1,
                _ => {}
            }
            j += 1;
        };
        if self.s.get(close + 1) != Some(&')') {
            return self.command_sub(w);
        }
        self.enter()?;
        let mut scratch = Word::default();
        self.scan_expansions(start + 3, close, &mut scratch)?;
        self.nest -= 1;
        self.i = close + 2;
        w.subs.extend(scratch.subs);
        w.dynamic = true;
        w.lit.push_str(&self.text(start, self.i));
        Ok(())
    }

    /// `${ … }`, which may hold substitutions (`${x:-$(cmd)}`).
    fn param(&mut self, w: &mut Word, in_dq: bool) -> Result<(), String> {
        self.enter()?;
        let start = self.i;
        self.i += 2;
        let mut depth = 1usize;
        let mut scratch = Word::default();
        loop {
            match self.at(0) {
                None => return Err("unterminated `${`".into()),
                Some('}') => {
                    self.i += 1;
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                Some('{') => {
                    depth += 1;
                    self.i += 1;
                }
                Some('\\') => self.i += 2,
                Some('\'') if !in_dq => self.single(&mut scratch)?,
                Some('"') => self.double(&mut scratch)?,
                Some('$') => self.dollar(&mut scratch, true)?,
                Some('`') => self.backtick(&mut scratch)?,
                Some(_) => self.i += 1,
            }
        }
        self.nest -= 1;
        w.subs.extend(scratch.subs);
        w.dynamic = true;
        let text = self.text(start, self.i);
        if text.ends_with("@P}") {
            w.reeval = true;
        }
        w.lit.push_str(&text);
        Ok(())
    }

    fn backtick(&mut self, w: &mut Word) -> Result<(), String> {
        let start = self.i;
        self.i += 1;
        let mut inner = String::new();
        loop {
            match self.at(0) {
                None => return Err("unterminated backtick".into()),
                Some('`') => {
                    self.i += 1;
                    break;
                }
                Some('\\') => {
                    match self.at(1) {
                        Some(n @ ('`' | '$' | '\\')) => inner.push(n),
                        Some(n) => {
                            inner.push('\\');
                            inner.push(n);
                        }
                        None => inner.push('\\'),
                    }
                    self.i += 2;
                }
                Some(c) => {
                    inner.push(c);
                    self.i += 1;
                }
            }
        }
        w.subs.push(inner);
        w.dynamic = true;
        w.lit.push_str(&self.text(start, self.i));
        Ok(())
    }

    /// `$'…'` with its backslash escapes decoded (`$'\x72m'` is `rm`).
    fn ansi_c(&mut self, w: &mut Word) -> Result<(), String> {
        w.mark_quoted();
        self.i += 2;
        let from = w.lit.len();
        loop {
            match self.at(0) {
                None => return Err("unterminated `$'`".into()),
                Some('\'') => {
                    self.i += 1;
                    w.note_code_text(from);
                    return Ok(());
                }
                Some('\\') => {
                    let Some(n) = self.at(1) else {
                        return Err("unterminated `$'`".into());
                    };
                    self.i += 2;
                    let simple = match n {
                        'a' => Some('\x07'),
                        'b' => Some('\x08'),
                        'e' | 'E' => Some('\x1b'),
                        'f' => Some('\x0c'),
                        'n' => Some('\n'),
                        'r' => Some('\r'),
                        't' => Some('\t'),
                        'v' => Some('\x0b'),
                        '\\' | '\'' | '"' | '?' => Some(n),
                        _ => None,
                    };
                    if let Some(c) = simple {
                        w.push_quoted(c);
                        continue;
                    }
                    let (radix, max) = match n {
                        '0'..='7' => {
                            self.i -= 1; // the first digit is part of the number
                            (8, 3)
                        }
                        'x' => (16, 2),
                        'u' => (16, 4),
                        'U' => (16, 8),
                        'c' => {
                            let c = self.at(0).map_or(0, |c| u32::from(c) & 0x1f);
                            self.i += 1;
                            w.push_quoted(char::from_u32(c).unwrap_or('\u{fffd}'));
                            continue;
                        }
                        _ => {
                            w.push_quoted('\\');
                            w.push_quoted(n);
                            continue;
                        }
                    };
                    let mut v: u32 = 0;
                    let mut digits = 0;
                    while digits < max {
                        match self.at(0).and_then(|c| c.to_digit(radix)) {
                            Some(d) => {
                                v = v.saturating_mul(radix).saturating_add(d);
                                self.i += 1;
                                digits += 1;
                            }
                            None => break,
                        }
                    }
                    if digits == 0 {
                        w.push_quoted('\\');
                        w.push_quoted(n);
                    } else {
                        w.push_quoted(char::from_u32(v).unwrap_or('\u{fffd}'));
                    }
                }
                Some(c) => {
                    w.push_quoted(c);
                    self.i += 1;
                }
            }
        }
    }
}

/// `>&2`, `2>&1`, `>&-`, `<&3-`: a descriptor, not a file name.
fn is_fd_dup(w: &Word) -> bool {
    let t = w.lit.strip_suffix('-').unwrap_or(&w.lit);
    !w.dynamic && t.chars().all(|c| c.is_ascii_digit())
}

/// One simple command: its words (assignments first) and redirections.
#[derive(Debug, Clone, Default)]
pub(super) struct Cmd {
    pub words: Vec<Word>,
    pub redirs: Vec<Redir>,
    pub start: usize,
    pub end: usize,
    /// Its standard input is the previous command's output.
    pub after_pipe: bool,
}

/// What the splitter found, in source order.
#[derive(Debug, Clone)]
pub(super) enum Item {
    Cmd(Cmd),
    /// A function definition; its body's commands follow as their own items.
    Func {
        name: String,
        start: usize,
        end: usize,
        /// The body calls the function itself through a pipe or `&`.
        fork_bomb: bool,
    },
    /// Substitutions in words that are not a command (`for x in $(…)`).
    Subs(Vec<String>),
}

#[derive(Debug, PartialEq, Eq)]
enum Open {
    Brace,
    Paren,
    If,
    Do,
}

struct FnFrame {
    item: usize,
    name: String,
    /// Nesting level once the body's `{` or `(` is open; `None` before.
    level: Option<usize>,
    self_calls: usize,
    pipe_or_bg: bool,
}

/// Splits tokens into simple commands and function definitions.
pub(super) fn split(toks: &[Tok]) -> Result<Vec<Item>, String> {
    Splitter::default().run(toks)
}

#[derive(Default)]
struct Splitter {
    items: Vec<Item>,
    cur: Option<Cmd>,
    stack: Vec<Open>,
    funcs: Vec<FnFrame>,
    after_pipe: bool,
    /// An operator that needs a command after it (`&&`, `|`…).
    need_cmd: Option<&'static str>,
    /// A command (or a group) just ended, so `&&` / `|` may follow.
    cmd_ended: bool,
}

impl Splitter {
    fn run(mut self, toks: &[Tok]) -> Result<Vec<Item>, String> {
        let mut i = 0;
        while i < toks.len() {
            let tok = &toks[i];
            match &tok.kind {
                TokKind::Word(w) => {
                    if (w.quoted || w.lit != "{") && self.funcs.iter().any(|f| f.level.is_none()) {
                        return Err("a function body must be a `{ … }` or `( … )` group".into());
                    }
                    let at_start = self
                        .cur
                        .as_ref()
                        .is_none_or(|c| c.words.is_empty() && c.redirs.is_empty());
                    if at_start && !w.quoted {
                        if let Some(next) = self.keyword(toks, i)? {
                            i = next;
                            continue;
                        }
                        if matches!(
                            toks.get(i + 1).map(|t| &t.kind),
                            Some(TokKind::Op(Op::LParen))
                        ) && matches!(
                            toks.get(i + 2).map(|t| &t.kind),
                            Some(TokKind::Op(Op::RParen))
                        ) {
                            self.define(w.lit.clone(), tok.start);
                            i += 3;
                            continue;
                        }
                    }
                    let c = self.cmd(tok.start);
                    c.words.push(w.clone());
                    c.end = tok.end;
                    self.need_cmd = None;
                }
                TokKind::Redir(r) => {
                    let c = self.cmd(tok.start);
                    c.redirs.push(r.clone());
                    c.end = tok.end;
                    self.need_cmd = None;
                }
                TokKind::Op(op) => self.op(*op, tok.end)?,
            }
            i += 1;
        }
        self.finish();
        if let Some(op) = self.need_cmd {
            return Err(format!("the command ends with `{op}`"));
        }
        if let Some(open) = self.stack.last() {
            let what = match open {
                Open::Brace => "`{` without `}`",
                Open::Paren => "`(` without `)`",
                Open::If => "`if` without `fi`",
                Open::Do => "`do` without `done`",
            };
            return Err(what.into());
        }
        if !self.funcs.is_empty() {
            return Err("a function definition without a body".into());
        }
        Ok(self.items)
    }

    fn cmd(&mut self, start: usize) -> &mut Cmd {
        let after_pipe = self.after_pipe;
        self.cur.get_or_insert_with(|| Cmd {
            start,
            end: start,
            after_pipe,
            ..Cmd::default()
        })
    }

    fn finish(&mut self) {
        if let Some(c) = self.cur.take() {
            let program = c.words.iter().find(|w| w.assignment().is_none());
            for f in self.funcs.iter_mut().filter(|f| f.level.is_some()) {
                if program.is_some_and(|p| p.lit == f.name) {
                    f.self_calls += 1;
                }
            }
            self.items.push(Item::Cmd(c));
            self.cmd_ended = true;
        }
    }

    fn define(&mut self, name: String, start: usize) {
        self.funcs.push(FnFrame {
            item: self.items.len(),
            name: name.clone(),
            level: None,
            self_calls: 0,
            pipe_or_bg: false,
        });
        self.items.push(Item::Func {
            name,
            start,
            end: start,
            fork_bomb: false,
        });
    }

    fn open(&mut self, what: Open) {
        self.stack.push(what);
        let level = self.stack.len();
        for f in self.funcs.iter_mut().filter(|f| f.level.is_none()) {
            f.level = Some(level);
        }
        self.cmd_ended = false;
    }

    fn close(&mut self, what: Open, word: &str, end: usize) -> Result<(), String> {
        self.finish();
        if self.stack.last() != Some(&what) {
            return Err(format!("unbalanced `{word}`"));
        }
        self.stack.pop();
        let level = self.stack.len();
        while let Some(f) = self.funcs.last() {
            if f.level.is_some_and(|l| l > level) {
                if let Some(f) = self.funcs.pop()
                    && let Some(Item::Func {
                        end: e, fork_bomb, ..
                    }) = self.items.get_mut(f.item)
                {
                    *e = end;
                    *fork_bomb = f.self_calls > 0 && f.pipe_or_bg;
                }
            } else {
                break;
            }
        }
        self.cmd_ended = true;
        Ok(())
    }

    /// Handles a reserved word at command start; returns the next token
    /// index, or `None` when the word is an ordinary command word.
    fn keyword(&mut self, toks: &[Tok], i: usize) -> Result<Option<usize>, String> {
        let TokKind::Word(w) = &toks[i].kind else {
            return Ok(None);
        };
        let end = toks[i].end;
        match w.lit.as_str() {
            "{" => self.open(Open::Brace),
            "}" => self.close(Open::Brace, "}", end)?,
            "if" => self.open(Open::If),
            "fi" => self.close(Open::If, "fi", end)?,
            "do" => self.open(Open::Do),
            "done" => self.close(Open::Do, "done", end)?,
            "then" | "else" | "elif" => {
                if !self.stack.contains(&Open::If) {
                    return Err(format!("`{}` outside `if`", w.lit));
                }
            }
            "!" | "while" | "until" => {}
            "case" | "esac" => return Err("`case` statements are not parsed".into()),
            "for" | "select" => return self.for_loop(toks, i).map(Some),
            "function" => {
                let Some(TokKind::Word(name)) = toks.get(i + 1).map(|t| &t.kind) else {
                    return Err("`function` without a name".into());
                };
                self.define(name.lit.clone(), toks[i].start);
                let mut next = i + 2;
                if matches!(
                    toks.get(next).map(|t| &t.kind),
                    Some(TokKind::Op(Op::LParen))
                ) && matches!(
                    toks.get(next + 1).map(|t| &t.kind),
                    Some(TokKind::Op(Op::RParen))
                ) {
                    next += 2;
                }
                return Ok(Some(next));
            }
            "[[" => return self.double_bracket(toks, i).map(Some),
            _ => return Ok(None),
        }
        self.need_cmd = None;
        Ok(Some(i + 1))
    }

    /// `for NAME [in WORDS…] ;` — the words are not a command, but
    /// substitutions in them run.
    fn for_loop(&mut self, toks: &[Tok], i: usize) -> Result<usize, String> {
        match toks.get(i + 1).map(|t| &t.kind) {
            Some(TokKind::Word(n)) if is_name(&n.lit) => {}
            Some(TokKind::Op(Op::LParen)) => {
                return Err("arithmetic `for (( … ))` loops are not parsed".into());
            }
            _ => return Err("`for` without a variable name".into()),
        }
        let mut j = i + 2;
        let mut subs = Vec::new();
        if matches!(toks.get(j).map(|t| &t.kind), Some(TokKind::Word(w)) if w.lit == "in") {
            j += 1;
            while let Some(TokKind::Word(w)) = toks.get(j).map(|t| &t.kind) {
                if w.lit == "do" && !w.quoted {
                    break;
                }
                subs.extend(w.subs.iter().cloned());
                j += 1;
            }
        }
        match toks.get(j).map(|t| &t.kind) {
            Some(TokKind::Op(Op::Semi | Op::Newline)) => j += 1,
            Some(TokKind::Word(w)) if w.lit == "do" => {}
            _ => return Err("`for` loop without `do`".into()),
        }
        if !subs.is_empty() {
            self.items.push(Item::Subs(subs));
        }
        Ok(j)
    }

    /// `[[ … ]]`: everything up to `]]` is an argument (`<`, `>`, `&&`
    /// inside it compare or combine, they do not redirect or chain).
    fn double_bracket(&mut self, toks: &[Tok], i: usize) -> Result<usize, String> {
        let mut c = Cmd {
            start: toks[i].start,
            end: toks[i].end,
            after_pipe: self.after_pipe,
            ..Cmd::default()
        };
        let mut j = i;
        loop {
            let Some(t) = toks.get(j) else {
                return Err("`[[` without `]]`".into());
            };
            c.end = t.end;
            match &t.kind {
                TokKind::Word(w) => {
                    c.words.push(w.clone());
                    if j > i && w.lit == "]]" && !w.quoted {
                        break;
                    }
                }
                TokKind::Redir(r) => c.words.push(r.target.clone()),
                TokKind::Op(Op::Newline) => return Err("`[[` without `]]`".into()),
                TokKind::Op(_) => {}
            }
            j += 1;
        }
        self.cur = Some(c);
        self.need_cmd = None;
        Ok(j + 1)
    }

    fn op(&mut self, op: Op, end: usize) -> Result<(), String> {
        for f in self.funcs.iter_mut().filter(|f| f.level.is_some()) {
            if matches!(op, Op::Pipe | Op::PipeAmp | Op::Amp) {
                f.pipe_or_bg = true;
            }
        }
        match op {
            Op::Newline => {
                self.finish();
                self.after_pipe = false;
                self.cmd_ended = false;
            }
            Op::Semi | Op::Amp => {
                if let Some(prev) = self.need_cmd {
                    return Err(format!("`{}` right after `{prev}`", op.as_str()));
                }
                self.finish();
                self.after_pipe = false;
                self.cmd_ended = false;
            }
            Op::AndIf | Op::OrIf | Op::Pipe | Op::PipeAmp => {
                if self.cur.is_none() && !self.cmd_ended {
                    return Err(format!("`{}` without a command before it", op.as_str()));
                }
                self.finish();
                self.cmd_ended = false;
                self.need_cmd = Some(op.as_str());
                self.after_pipe = matches!(op, Op::Pipe | Op::PipeAmp);
            }
            Op::LParen => {
                if self.cur.is_some() {
                    return Err("unexpected `(`".into());
                }
                self.open(Open::Paren);
            }
            Op::RParen => self.close(Open::Paren, ")", end)?,
            Op::DSemi => return Err("`;;` outside a `case`".into()),
        }
        Ok(())
    }
}
