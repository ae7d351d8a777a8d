//! The lexer of the shell classifier, for one dialect.
//!
//! [`lex`] turns a command line into words, operators and redirections the
//! way the chosen shell would: dash reads POSIX syntax only (`$'…'` is a
//! `$` and a single-quoted string, `&>` is `&` then `>`, `((` opens two
//! subshells, `<<<`, `|&` and `<( … )` are syntax errors), bash adds its
//! extensions (`$'…'`, `$"…"`, `$[…]`, `((…))`, `&>`, `|&`, here-strings,
//! process substitution, arrays, `{fd}>` named descriptors).
//!
//! Each word keeps what the classifier needs: its value after quote
//! removal, every expansion in it with its kind and position (see
//! [`ExpKind`]), which characters are live glob characters, and the source
//! of every command or process substitution inside it (classified
//! separately by the caller). The splitter is in `split.rs`.
//!
//! Both refuse what they do not understand with a message; the caller turns
//! that into "could not be parsed" at high risk. Every loop here moves
//! forward: each character is read a bounded number of times (nested
//! substitutions, at most [`MAX_NEST`] deep, are read once per level).

use crate::Shell;
use crate::work::tick;
use std::cell::Cell;

/// How deep substitutions and `${ … }` may nest while lexing one string.
pub(crate) const MAX_NEST: usize = 32;

/// What an expansion inside a word is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ExpKind {
    /// `$NAME`, `${NAME}`, `$1`, `$@`, `$?`…: the value of a parameter.
    Param(String),
    /// `${NAME:-WORD}`, `${NAME-WORD}`, `${NAME:+WORD}`, `${NAME+WORD}`,
    /// `${NAME:?WORD}`, `${NAME?WORD}`: the value, WORD, or an error.
    /// WORD's text when it is plain (no expansion, quote or escape).
    Alt(String, Option<String>),
    /// `${NAME:=WORD}`, `${NAME=WORD}`: assigns WORD when NAME is unset.
    Assign(String, Option<String>),
    /// `${#NAME}`: a length.
    Length(String),
    /// `${NAME%PAT}`, `${NAME%%PAT}`: the value with a suffix removed.
    TrimEnd(String),
    /// `${NAME#PAT}`, `${NAME##PAT}`: the value with a prefix removed.
    TrimStart(String),
    /// Bash string transforms with no code in them: `${x/a/b}`, `${x^^}`,
    /// `${x,}`, `${x@Q}`… (dash rejects them: "Bad substitution").
    Transform(String),
    /// `${x:OFFSET:LENGTH}` (bash): the offsets are arithmetic.
    Substring(String),
    /// `${!x}`, `${!x*}`, `${!a[@]}` (bash): indirection.
    Indirect(String),
    /// `${a[…]}`, `${#a[@]}` (bash): an array subscript.
    Subscript(String),
    /// `${x@P}` (bash): prompt expansion, which runs substitutions in the
    /// value.
    Prompt(String),
    /// A `${…}` form this lexer does not know.
    Unknown,
    /// `$(( … ))`, `$[ … ]` (bash), or the body of `(( … ))`: the
    /// expression's text.
    Arith(String),
    /// `$( … )` or `` ` … ` ``.
    Command,
    /// `<( … )` or `>( … )` (bash).
    Process,
    /// `NAME=( … )` (bash): an array.
    Array,
}

/// One expansion inside a word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Exp {
    /// Byte range of its source text in the word's `lit`.
    pub at: usize,
    pub len: usize,
    pub kind: ExpKind,
    /// Inside double quotes (or a here-document): no field splitting, no
    /// pathname expansion of its value.
    pub quoted: bool,
    /// Inside another expansion (`${x:-$y}`): a feature of the word, but
    /// not a piece of its value.
    pub nested: bool,
}

/// One shell word.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Word {
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
    /// Byte offsets in `lit` of the unquoted (live) glob characters.
    pub globs: Vec<usize>,
    /// Every expansion, in order (nested ones after their outer one).
    pub exps: Vec<Exp>,
    /// Sources of `$( … )`, `` ` … ` ``, `<( … )` and `>( … )` inside it.
    pub subs: Vec<String>,
    /// Quoted text that looks like a substitution (`'$(rm x)'`): inert
    /// here, but code if a later expansion evaluates it (arithmetic on
    /// `a[$(…)]`, `${x@P}`, `eval`).
    pub code_text: bool,
    /// Byte index in `lit` of the first quoted or escaped character.
    first_quoted: Option<usize>,
}

impl Word {
    /// A plain, unquoted word (for tests and synthesised arguments).
    pub fn plain(lit: &str) -> Word {
        Word {
            lit: lit.to_string(),
            ..Word::default()
        }
    }

    /// The part of the word from byte `from` of `lit` on, as a program
    /// reads an option's value (`-oFILE`, `of=FILE`, `--output=FILE`).
    pub fn slice(&self, from: usize) -> Word {
        let from = from.min(self.lit.len());
        let exps: Vec<Exp> = self
            .exps
            .iter()
            .filter(|e| e.at >= from)
            .map(|e| Exp {
                at: e.at - from,
                ..e.clone()
            })
            .collect();
        let globs: Vec<usize> = self
            .globs
            .iter()
            .filter(|g| **g >= from)
            .map(|g| g - from)
            .collect();
        // An expansion cut in two leaves an unknown value.
        let cut = self.exps.iter().any(|e| e.at < from && e.at + e.len > from);
        Word {
            lit: self.lit.get(from..).unwrap_or("").to_string(),
            start: self.start,
            end: self.end,
            dynamic: !exps.is_empty() || cut,
            quoted: self.quoted,
            glob: !globs.is_empty(),
            globs,
            exps: if cut {
                vec![Exp {
                    at: 0,
                    len: self.lit.len() - from,
                    kind: ExpKind::Unknown,
                    quoted: true,
                    nested: false,
                }]
            } else {
                exps
            },
            subs: Vec::new(),
            code_text: self.code_text,
            first_quoted: self.first_quoted.map(|q| q.saturating_sub(from)),
        }
    }

    fn push(&mut self, c: char) {
        self.lit.push(c);
    }

    fn push_quoted(&mut self, c: char) {
        self.mark_quoted();
        self.lit.push(c);
    }

    fn push_glob(&mut self, c: char) {
        self.glob = true;
        self.globs.push(self.lit.len());
        self.lit.push(c);
    }

    /// Appends an expansion's source text and records it.
    fn expansion(&mut self, text: &str, kind: ExpKind, quoted: bool, nested: bool) {
        self.dynamic = true;
        self.exps.push(Exp {
            at: self.lit.len(),
            len: text.len(),
            kind,
            quoted,
            nested,
        });
        self.lit.push_str(text);
    }

    /// Records expansions found inside the last one (`${x:-$y}`): they are
    /// features of the word, placed over the outer expansion's text.
    fn nested(&mut self, inner: Vec<Exp>) {
        let Some(outer) = self.exps.last() else {
            return;
        };
        let (at, len) = (outer.at, outer.len);
        self.exps.extend(inner.into_iter().map(|e| Exp {
            at,
            len,
            nested: true,
            ..e
        }));
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
    /// `NAME[i]=…` (the name part unquoted, as the shell requires). Bash
    /// only for the `+=` and subscript forms.
    pub fn assignment(&self) -> Option<&str> {
        let eq = self.lit.find('=')?;
        if self.first_quoted.is_some_and(|q| q < eq) || self.exps.iter().any(|e| e.at < eq) {
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

    /// The value of an assignment word (after the `=`).
    pub fn assigned_value(&self) -> Word {
        match self.lit.find('=') {
            Some(eq) => self.slice(eq + 1),
            None => Word::default(),
        }
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

    /// The word's text as a glob pattern: live glob characters as they
    /// are, every other `*`, `?`, `[`, `]` and `\` escaped.
    pub fn pattern(&self) -> String {
        let mut out = String::with_capacity(self.lit.len());
        let mut live = self.globs.iter().peekable();
        for (i, c) in self.lit.char_indices() {
            if live.peek() == Some(&&i) {
                live.next();
                out.push(c);
                // A live `[` opens a bracket whose `]` must stay live too.
                continue;
            }
            if matches!(c, '*' | '?' | '[' | '\\') {
                out.push('\\');
            }
            out.push(c);
        }
        out
    }
}

/// A shell variable name.
pub(crate) fn is_name(s: &str) -> bool {
    let mut cs = s.chars();
    cs.next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && cs.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
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
    pub(crate) fn as_str(self) -> &'static str {
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
pub(crate) enum RedirKind {
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
pub(crate) struct Redir {
    pub kind: RedirKind,
    pub op: &'static str,
    pub target: Word,
    /// An unquoted here-document's body, whose expansions run.
    pub body: Option<Box<Word>>,
    /// A here-document's text (expansions as written), what a program
    /// reading it gets as input.
    pub body_text: Option<String>,
    /// `{NAME}>file` (bash): the descriptor number is assigned to NAME.
    pub named_fd: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TokKind {
    Word(Word),
    Op(Op),
    Redir(Redir),
    /// Bash `(( … ))` at the start of a command: a word whose only
    /// expansion is the arithmetic.
    Arith(Word),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tok {
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

/// Finds the `)` that closes a group opened just before `from`, the way
/// bash reads `((`, `$((` and `$(`: parentheses are counted, but not
/// inside `'…'`, `"…"` (whose own `$( … )` nest), `` `…` `` or after a
/// backslash (bash's `parse_matched_pair`, as it reads arithmetic).
/// `Ok(None)` at the end of the text. Every character read is taken from
/// `budget`, shared by one whole lexing, so that many `((` that turn out to
/// be subshells cannot make the lexer quadratic: past the budget the text is
/// refused.
fn group_close(s: &[char], from: usize, budget: &Cell<usize>) -> Result<Option<usize>, String> {
    #[derive(Clone, Copy, PartialEq)]
    enum In {
        Group,
        Double,
    }
    let mut stack = vec![(In::Group, 1usize)];
    let mut i = from;
    while let Some(&c) = s.get(i) {
        let began = i;
        let Some(&mut (mode, ref mut depth)) = stack.last_mut() else {
            break;
        };
        match (mode, c) {
            (_, '\\') => i += 1,
            (In::Group, '\'') => {
                i += 1;
                while s.get(i).is_some_and(|c| *c != '\'') {
                    i += 1;
                }
            }
            (_, '`') => {
                i += 1;
                while let Some(&c) = s.get(i) {
                    if c == '`' {
                        break;
                    }
                    i += if c == '\\' { 2 } else { 1 };
                }
            }
            (In::Group, '"') => stack.push((In::Double, 0)),
            (In::Double, '"') => {
                stack.pop();
            }
            (In::Double, '$') if s.get(i + 1) == Some(&'(') => {
                stack.push((In::Group, 1));
                i += 1;
            }
            (In::Group, '(') => *depth += 1,
            (In::Group, ')') => {
                *depth -= 1;
                if *depth == 0 {
                    stack.pop();
                    if stack.is_empty() {
                        return Ok(Some(i));
                    }
                }
            }
            _ => {}
        }
        i += 1;
        let used = i - began;
        tick(used);
        match budget.get().checked_sub(used) {
            Some(left) => budget.set(left),
            None => return Err("too many `((` to tell arithmetic from subshells".into()),
        }
    }
    Ok(None)
}

/// Lexes a whole command line for `shell`.
pub(crate) fn lex(src: &[char], shell: Shell) -> Result<Vec<Tok>, String> {
    let budget = Cell::new(4 * src.len() + 4096);
    let mut lx = Lexer::new(src, &budget, shell, 0, 0);
    lx.run(false)?;
    Ok(lx.toks)
}

struct Lexer<'s> {
    s: &'s [char],
    /// Characters `group_close` may still read (see there).
    budget: &'s Cell<usize>,
    shell: Shell,
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

/// Reserved words after which a command starts (so `((` may follow).
const OPENERS: &[&str] = &[
    "if", "then", "else", "elif", "do", "while", "until", "!", "{", "time", "for",
];

impl<'s> Lexer<'s> {
    fn new(s: &'s [char], budget: &'s Cell<usize>, shell: Shell, i: usize, nest: usize) -> Self {
        Lexer {
            s,
            budget,
            shell,
            i,
            nest,
            toks: Vec::new(),
            heredocs: Vec::new(),
        }
    }

    fn bash(&self) -> bool {
        self.shell == Shell::Bash
    }

    fn at(&self, k: usize) -> Option<char> {
        tick(1);
        self.s.get(self.i + k).copied()
    }

    fn text(&self, from: usize, to: usize) -> String {
        self.s[from.min(self.s.len())..to.min(self.s.len())]
            .iter()
            .collect()
    }

    /// `((` at `open` closes as `))`: the `)` that closes the inner `(` is
    /// followed by another `)`. `Some(inner)` for arithmetic, `None` for
    /// two subshells.
    fn double_paren_close(&self, open: usize) -> Result<Option<usize>, String> {
        match group_close(self.s, open + 2, self.budget)? {
            Some(inner) if self.s.get(inner + 1) == Some(&')') => Ok(Some(inner)),
            Some(_) => Ok(None),
            None => Err("unterminated `((`".into()),
        }
    }

    fn op(&mut self, op: Op, start: usize, len: usize) {
        self.i += len;
        self.toks.push(Tok {
            kind: TokKind::Op(op),
            start,
            end: self.i,
        });
    }

    /// A command may start here: nothing before, an operator, or a
    /// reserved word that opens a command list.
    fn command_start(&self) -> bool {
        match self.toks.last().map(|t| &t.kind) {
            None => true,
            Some(TokKind::Op(op)) => *op != Op::RParen,
            Some(TokKind::Word(w)) => !w.quoted && OPENERS.contains(&w.lit.as_str()),
            Some(_) => false,
        }
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
                '&' if self.bash() && self.at(1) == Some('>') => self.redirect(start, None)?,
                '&' => self.op(Op::Amp, start, 1),
                '|' if self.at(1) == Some('|') => self.op(Op::OrIf, start, 2),
                '|' if self.bash() && self.at(1) == Some('&') => self.op(Op::PipeAmp, start, 2),
                '|' => self.op(Op::Pipe, start, 1),
                '(' if self.bash() && self.at(1) == Some('(') && self.command_start() => {
                    match self.double_paren_close(start)? {
                        Some(inner) => self.arith_command(start, inner)?,
                        None => {
                            depth += 1;
                            self.op(Op::LParen, start, 1);
                        }
                    }
                }
                '(' => {
                    depth += 1;
                    self.op(Op::LParen, start, 1);
                }
                ')' => {
                    if depth == 0 && close {
                        return Ok(self.i);
                    }
                    // At the top, an unmatched `)` may end a `case`
                    // pattern; the splitter decides.
                    depth = depth.saturating_sub(1);
                    self.op(Op::RParen, start, 1);
                }
                '<' | '>' if self.bash() && self.at(1) == Some('(') => {
                    let mut w = Word {
                        start,
                        ..Word::default()
                    };
                    self.process_sub(&mut w)?;
                    self.word_into(&mut w)?;
                    w.end = self.i;
                    self.push_word(w);
                }
                '<' | '>' => self.redirect(start, None)?,
                _ => {
                    let w = self.word()?;
                    let next_redir = matches!(self.at(0), Some('<' | '>'))
                        && !(self.bash() && self.at(1) == Some('('));
                    let fd = !w.quoted
                        && !w.dynamic
                        && !w.lit.is_empty()
                        && w.lit.chars().all(|c| c.is_ascii_digit())
                        && next_redir;
                    let named = self.bash() && next_redir && !w.quoted && !w.dynamic && {
                        let inner = w.lit.strip_prefix('{').and_then(|r| r.strip_suffix('}'));
                        inner.is_some_and(is_name)
                    };
                    if fd {
                        self.redirect(start, None)?;
                    } else if named {
                        let name = w.lit[1..w.lit.len() - 1].to_string();
                        self.redirect(start, Some(name))?;
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

    /// Bash `(( … ))` from `open` to the inner `)` at `inner`.
    fn arith_command(&mut self, open: usize, inner: usize) -> Result<(), String> {
        self.enter()?;
        let mut w = Word {
            start: open,
            ..Word::default()
        };
        let mut scratch = Word::default();
        self.scan_expansions(open + 2, inner, &mut scratch)?;
        self.nest -= 1;
        let expr = self.text(open + 2, inner);
        w.subs = scratch.subs;
        let text = self.text(open, inner + 2);
        w.expansion(&text, ExpKind::Arith(expr), true, false);
        w.nested(scratch.exps);
        self.i = inner + 2;
        w.end = self.i;
        self.toks.push(Tok {
            kind: TokKind::Arith(w),
            start: open,
            end: self.i,
        });
        Ok(())
    }

    /// A redirection operator at `self.i` and its target word.
    fn redirect(&mut self, start: usize, named_fd: Option<String>) -> Result<(), String> {
        let three: String = (0..3).filter_map(|k| self.at(k)).collect();
        let bash = self.bash();
        let (op, kind): (&'static str, RedirKind) = if three.starts_with("&>>") {
            ("&>>", RedirKind::Write)
        } else if three.starts_with("&>") {
            ("&>", RedirKind::Write)
        } else if bash && three.starts_with("<<<") {
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
            // A `#` starting a word starts a comment.
            None | Some('#') => return Err(format!("redirection `{op}` has no target")),
            Some(c)
                if is_meta(c) && !(bash && matches!(c, '<' | '>') && self.at(1) == Some('(')) =>
            {
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
        // Digits right before `<` or `>` are the next redirection's
        // descriptor, so this one has no target (bash still reads `>&2<x`).
        let digits = !target.quoted
            && !target.dynamic
            && !target.lit.is_empty()
            && target.lit.chars().all(|c| c.is_ascii_digit());
        if digits && matches!(self.at(0), Some('<' | '>')) && !(bash && kind == RedirKind::Dup) {
            return Err(format!("redirection `{op}` has no target"));
        }
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
                body: None,
                body_text: None,
                named_fd,
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
            let text = self.text(body_start, body_end);
            let mut body = None;
            if doc.expand {
                let mut w = Word::default();
                let resume = self.i;
                self.scan_expansions(body_start, body_end, &mut w)?;
                self.i = resume;
                body = Some(Box::new(w));
            }
            if let Some(Tok {
                kind: TokKind::Redir(r),
                ..
            }) = self.toks.get_mut(doc.tok)
            {
                r.body = body;
                r.body_text = Some(text);
            }
        }
        Ok(())
    }

    /// Finds expansions in `from..to` where quotes are literal (a
    /// here-document body, an arithmetic expression). They count as
    /// quoted: no splitting, no globbing.
    fn scan_expansions(&mut self, from: usize, to: usize, w: &mut Word) -> Result<(), String> {
        self.i = from;
        while self.i < to {
            match self.at(0) {
                Some('\\') => self.i += 2,
                Some('$') => self.dollar(w, true)?,
                Some('`') => self.backtick(w, true)?,
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
                '(' if self.bash() && w.is_array_prefix() => self.array(w)?,
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
                '`' => self.backtick(w, false)?,
                '*' | '?' | '[' => {
                    w.push_glob(c);
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
        let mut sub = Lexer::new(self.s, self.budget, self.shell, self.i, self.nest);
        let end = sub.run(true)?;
        let inner = self.text(self.i, end);
        self.i = end + 1;
        self.nest -= 1;
        Ok((inner, sub.toks))
    }

    /// `<( … )` or `>( … )` at `self.i` (bash).
    fn process_sub(&mut self, w: &mut Word) -> Result<(), String> {
        let start = self.i;
        self.i += 2;
        let (inner, _) = self.nested()?;
        w.subs.push(inner);
        let text = self.text(start, self.i);
        w.expansion(&text, ExpKind::Process, false, false);
        Ok(())
    }

    /// `NAME=( … )` (bash): the elements are words; their expansions and
    /// substitutions count.
    fn array(&mut self, w: &mut Word) -> Result<(), String> {
        let start = self.i;
        self.i += 1;
        let (_, toks) = self.nested()?;
        let mut nested = Vec::new();
        for t in toks {
            match t.kind {
                TokKind::Word(x) => {
                    w.subs.extend(x.subs);
                    w.code_text |= x.code_text;
                    nested.extend(x.exps);
                }
                TokKind::Op(Op::Newline) => {}
                _ => return Err("unexpected operator in an array assignment".into()),
            }
        }
        let text = self.text(start, self.i);
        w.expansion(&text, ExpKind::Array, false, false);
        w.nested(nested);
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
                Some('`') => self.backtick(w, true)?,
                Some(c) => {
                    w.push_quoted(c);
                    self.i += 1;
                }
            }
        }
    }

    /// `$…` at `self.i`: an expansion, ANSI-C or locale quoting (bash), or
    /// a literal `$`.
    fn dollar(&mut self, w: &mut Word, in_dq: bool) -> Result<(), String> {
        let start = self.i;
        let name: String = match self.at(1) {
            Some('(') if self.at(2) == Some('(') => return self.arith(w, in_dq),
            Some('(') => return self.command_sub(w, in_dq),
            Some('{') => return self.param(w, in_dq),
            Some('[') if self.bash() => return self.bracket_arith(w, in_dq),
            Some('\'') if self.bash() && !in_dq => return self.ansi_c(w),
            Some('"') if self.bash() && !in_dq => {
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
                self.text(start + 1, self.i)
            }
            Some(c) if c.is_ascii_digit() || "@*#?$!-".contains(c) => {
                self.i += 2;
                c.to_string()
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
        };
        let text = self.text(start, self.i);
        w.expansion(&text, ExpKind::Param(name), in_dq, false);
        Ok(())
    }

    fn command_sub(&mut self, w: &mut Word, in_dq: bool) -> Result<(), String> {
        let start = self.i;
        self.i += 2;
        let (inner, _) = self.nested()?;
        w.subs.push(inner);
        let text = self.text(start, self.i);
        w.expansion(&text, ExpKind::Command, in_dq, false);
        Ok(())
    }

    /// `$(( … ))`; like bash, `$((cmd) …)` whose parens do not close as
    /// `))` is a command substitution of a subshell instead.
    fn arith(&mut self, w: &mut Word, in_dq: bool) -> Result<(), String> {
        let start = self.i;
        let Some(close) = self.double_paren_close(start + 1)? else {
            return self.command_sub(w, in_dq);
        };
        self.arith_body(w, start, start + 3, close, close + 2, in_dq)
    }

    /// `$[ … ]` (bash's old arithmetic).
    fn bracket_arith(&mut self, w: &mut Word, in_dq: bool) -> Result<(), String> {
        let start = self.i;
        let mut j = start + 2;
        let mut depth = 0usize;
        let close = loop {
            tick(1);
            match self.s.get(j) {
                None => return Err("unterminated `$[`".into()),
                Some('[') => depth += 1,
                Some(']') if depth == 0 => break j,
                Some(']') => depth -= 1,
                _ => {}
            }
            j += 1;
        };
        self.arith_body(w, start, start + 2, close, close + 1, in_dq)
    }

    /// Records an arithmetic expansion from `start` to `end`, whose
    /// expression is `from..to`.
    fn arith_body(
        &mut self,
        w: &mut Word,
        start: usize,
        from: usize,
        to: usize,
        end: usize,
        in_dq: bool,
    ) -> Result<(), String> {
        self.enter()?;
        let mut scratch = Word::default();
        self.scan_expansions(from, to, &mut scratch)?;
        self.nest -= 1;
        self.i = end;
        w.subs.extend(scratch.subs);
        let text = self.text(start, end);
        w.expansion(&text, ExpKind::Arith(self.text(from, to)), in_dq, false);
        w.nested(scratch.exps);
        Ok(())
    }

    /// `${ … }`, which may hold expansions and substitutions
    /// (`${x:-$(cmd)}`).
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
                Some('`') => self.backtick(&mut scratch, true)?,
                Some(_) => self.i += 1,
            }
        }
        self.nest -= 1;
        w.subs.extend(scratch.subs);
        w.code_text |= scratch.code_text;
        let text = self.text(start, self.i);
        let inner = &text[2..text.len() - 1];
        w.expansion(&text, param_kind(inner), in_dq, false);
        w.nested(scratch.exps);
        Ok(())
    }

    fn backtick(&mut self, w: &mut Word, in_dq: bool) -> Result<(), String> {
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
        let text = self.text(start, self.i);
        w.expansion(&text, ExpKind::Command, in_dq, false);
        Ok(())
    }

    /// `$'…'` (bash) with its backslash escapes decoded (`$'\x72m'` is
    /// `rm`).
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
                    self.ansi_escape(w, n);
                }
                Some(c) => {
                    w.push_quoted(c);
                    self.i += 1;
                }
            }
        }
    }

    /// One `\n`-style escape of `$'…'`, after the backslash and `n`.
    fn ansi_escape(&mut self, w: &mut Word, n: char) {
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
            return;
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
                return;
            }
            _ => {
                w.push_quoted('\\');
                w.push_quoted(n);
                return;
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
}

/// What `${INNER}` is (see [`ExpKind`]).
fn param_kind(inner: &str) -> ExpKind {
    let plain = |w: &str| (!w.contains(['$', '`', '\'', '"', '\\'])).then(|| w.to_string());
    // A special parameter alone: `${#}`, `${!}`, `${?}`, `${-}`, `${@}`…
    if inner.chars().count() == 1 && "@*#?$!-0123456789".contains(inner) {
        return ExpKind::Param(inner.to_string());
    }
    if let Some(rest) = inner.strip_prefix('!') {
        return ExpKind::Indirect(rest.to_string());
    }
    if let Some(rest) = inner.strip_prefix('#') {
        let name_end = rest
            .find(|c: char| !(c == '_' || c.is_ascii_alphanumeric()))
            .unwrap_or(rest.len());
        return match &rest[name_end..] {
            "" if name_end > 0 => ExpKind::Length(rest.to_string()),
            s if s.starts_with('[') => ExpKind::Subscript(rest[..name_end].to_string()),
            s if name_end == 0 && s.chars().count() == 1 && "@*#?$!-".contains(s) => {
                ExpKind::Length(s.to_string())
            }
            _ => ExpKind::Unknown,
        };
    }
    let name_len = match inner.chars().next() {
        Some(c) if c == '_' || c.is_ascii_alphabetic() => inner
            .find(|c: char| !(c == '_' || c.is_ascii_alphanumeric()))
            .unwrap_or(inner.len()),
        Some(c) if c.is_ascii_digit() => inner
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(inner.len()),
        Some(c) if "@*#?$!-".contains(c) => 1,
        _ => return ExpKind::Unknown,
    };
    let name = inner[..name_len].to_string();
    let rest = &inner[name_len..];
    let op = |k: usize| rest[k..].to_string();
    match rest.chars().next() {
        None => ExpKind::Param(name),
        Some('[') => ExpKind::Subscript(name),
        Some(':') => match rest[1..].chars().next() {
            Some('-' | '+' | '?') => ExpKind::Alt(name, plain(&op(2))),
            Some('=') => ExpKind::Assign(name, plain(&op(2))),
            _ => ExpKind::Substring(name),
        },
        Some('-' | '+' | '?') => ExpKind::Alt(name, plain(&op(1))),
        Some('=') => ExpKind::Assign(name, plain(&op(1))),
        Some('%') => ExpKind::TrimEnd(name),
        Some('#') => ExpKind::TrimStart(name),
        Some('/' | '^' | ',') => ExpKind::Transform(name),
        Some('@') => match &rest[1..] {
            "P" => ExpKind::Prompt(name),
            "Q" | "E" | "U" | "u" | "L" | "a" | "A" | "K" | "k" => ExpKind::Transform(name),
            _ => ExpKind::Unknown,
        },
        Some(_) => ExpKind::Unknown,
    }
}

/// `>&2`, `2>&1`, `>&-`, `<&3-`: a descriptor, not a file name.
fn is_fd_dup(w: &Word) -> bool {
    let t = w.lit.strip_suffix('-').unwrap_or(&w.lit);
    !w.dynamic && t.chars().all(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(src: &str, shell: Shell) -> Vec<String> {
        let chars: Vec<char> = src.chars().collect();
        lex(&chars, shell)
            .unwrap_or_default()
            .into_iter()
            .map(|t| match t.kind {
                TokKind::Word(w) => w.lit,
                TokKind::Op(op) => op.as_str().to_string(),
                TokKind::Redir(r) => format!("{}{}", r.op, r.target.lit),
                TokKind::Arith(w) => format!("arith:{}", w.lit),
            })
            .collect()
    }

    #[test]
    fn dialects_differ_where_the_shells_do() {
        let src = "echo $'\\'; reboot; echo '\\'";
        assert_eq!(words(src, Shell::Bash), ["echo", "'; reboot; echo '"]);
        assert_eq!(
            words(src, Shell::Dash),
            ["echo", "$\\", ";", "reboot", ";", "echo", "\\"]
        );
        assert_eq!(words("((1<<2))", Shell::Bash), ["arith:((1<<2))"]);
        // dash: two subshells, and `1<<2` is a here-document on descriptor 1.
        assert_eq!(words("((1<<2))", Shell::Dash), ["(", "(", "<<2", ")", ")"]);
        assert_eq!(words("((ls) )", Shell::Bash), ["(", "(", "ls", ")", ")"]);
        assert_eq!(words("echo $[1<<2]", Shell::Bash), ["echo", "$[1<<2]"]);
        assert_eq!(words("echo hi &> f", Shell::Bash), ["echo", "hi", "&>f"]);
        assert_eq!(
            words("echo hi &> f", Shell::Dash),
            ["echo", "hi", "&", ">f"]
        );
        assert_eq!(words("{fd}>x ls", Shell::Bash), [">x", "ls"]);
        assert_eq!(words("{fd}>x ls", Shell::Dash), ["{fd}", ">x", "ls"]);
    }

    #[test]
    fn parameter_forms() {
        for (inner, kind) in [
            ("x", ExpKind::Param("x".into())),
            ("#", ExpKind::Param("#".into())),
            ("#x", ExpKind::Length("x".into())),
            ("x:-a", ExpKind::Alt("x".into(), Some("a".into()))),
            ("x-$y", ExpKind::Alt("x".into(), None)),
            (
                "PATH:=/tmp",
                ExpKind::Assign("PATH".into(), Some("/tmp".into())),
            ),
            ("x%.rs", ExpKind::TrimEnd("x".into())),
            ("x##*/", ExpKind::TrimStart("x".into())),
            ("x/a/b", ExpKind::Transform("x".into())),
            ("x:1:2", ExpKind::Substring("x".into())),
            ("!x", ExpKind::Indirect("x".into())),
            ("a[$i]", ExpKind::Subscript("a".into())),
            ("#a[@]", ExpKind::Subscript("a".into())),
            ("x@P", ExpKind::Prompt("x".into())),
            ("x@Z", ExpKind::Unknown),
        ] {
            assert_eq!(param_kind(inner), kind, "{inner}");
        }
    }

    #[test]
    fn patterns_escape_quoted_glob_characters() {
        let chars: Vec<char> = "/dev/[s]da'*'".chars().collect();
        let toks = lex(&chars, Shell::Dash).unwrap_or_default();
        let Some(TokKind::Word(w)) = toks.first().map(|t| &t.kind) else {
            panic!("no word");
        };
        assert_eq!(w.pattern(), "/dev/[s]da\\*");
    }
}
