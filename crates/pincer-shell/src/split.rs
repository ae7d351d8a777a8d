//! The part splitter: tokens into simple commands, in order, seeing
//! through `( … )`, `{ …; }`, `if`/`while`/`until`/`for`/`case` and
//! function definitions, plus bash's `[[ … ]]`, `(( … ))`, `for (( … ))`,
//! `select` and `function NAME`. In dash those bash words are ordinary
//! command words, as they are to dash (`[[` is a program, `function f {`
//! a syntax error).
//!
//! Every token is handled in constant time (open groups and functions are
//! counted, not searched), so splitting is linear in the number of tokens.

use crate::Shell;
use crate::lex::{Op, Redir, Tok, TokKind, Word, is_name};
use crate::work::tick;
use std::collections::HashMap;

/// One simple command: its words (assignments first) and redirections.
#[derive(Debug, Clone, Default)]
pub(crate) struct Cmd {
    pub words: Vec<Word>,
    pub redirs: Vec<Redir>,
    pub start: usize,
    pub end: usize,
    /// Its standard input is the previous command's output.
    pub after_pipe: bool,
    /// It is inside a loop body, so it may run more than once.
    pub in_loop: bool,
}

/// What the splitter found, in source order.
#[derive(Debug, Clone)]
pub(crate) enum Item {
    Cmd(Cmd),
    /// A function definition; its body's commands follow as their own items.
    Func {
        name: String,
        start: usize,
        end: usize,
        /// The body calls the function itself through a pipe or `&`.
        fork_bomb: bool,
    },
    /// `for NAME [in WORDS]` or `select NAME in WORDS` (bash): NAME is
    /// assigned each word in turn (`None`: the positional parameters).
    For {
        name: Word,
        words: Option<Vec<Word>>,
        start: usize,
        end: usize,
    },
    /// Words that are expanded but not run: a `case` subject and its
    /// patterns.
    Words {
        words: Vec<Word>,
        start: usize,
        end: usize,
    },
    /// Bash `(( … ))` or `for (( … ))`: one arithmetic word.
    Arith {
        word: Word,
        start: usize,
        end: usize,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Brace,
    Paren,
    If,
    Do,
    Case,
}

/// Where a `case` statement is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CaseState {
    /// Reading patterns up to `)`.
    Patterns,
    /// Reading the commands of one branch, up to `;;` or `esac`.
    Body,
}

struct FnFrame {
    item: usize,
    name: String,
    /// Nesting level once the body's `{` or `(` is open; `None` before.
    level: Option<usize>,
    self_calls: usize,
    /// Pipes and `&` seen before the body opened.
    pipes_before: usize,
}

/// Splits tokens into items, reading the reserved words of `shell`.
pub(crate) fn split(toks: &[Tok], shell: Shell) -> Result<Vec<Item>, String> {
    Splitter {
        shell,
        items: Vec::new(),
        cur: None,
        stack: Vec::new(),
        cases: Vec::new(),
        if_depth: 0,
        do_depth: 0,
        funcs: Vec::new(),
        pending: Vec::new(),
        open_names: HashMap::new(),
        pipes: 0,
        after_pipe: false,
        need_cmd: None,
        cmd_ended: false,
        arith_for: false,
        seen: false,
    }
    .run(toks)
}

struct Splitter {
    shell: Shell,
    items: Vec<Item>,
    cur: Option<Cmd>,
    stack: Vec<Open>,
    /// One entry per open `case`.
    cases: Vec<CaseState>,
    if_depth: usize,
    /// How many `do … done` bodies are open.
    do_depth: usize,
    funcs: Vec<FnFrame>,
    /// Functions whose body has not opened yet (indices into `funcs`).
    pending: Vec<usize>,
    /// Open functions by name (indices into `funcs`, innermost last).
    open_names: HashMap<String, Vec<usize>>,
    /// Pipes and `&` seen so far.
    pipes: usize,
    after_pipe: bool,
    /// An operator that needs a command after it (`&&`, `|`…).
    need_cmd: Option<&'static str>,
    /// A command (or a group) just ended, so `&&` / `|` may follow.
    cmd_ended: bool,
    /// `for (( … ))` was read; `do` must follow.
    arith_for: bool,
    /// A command was seen since the last keyword or group that needs one
    /// (`then`, `do`, `{`, `(`…): the shells refuse an empty list there.
    seen: bool,
}

impl Splitter {
    fn bash(&self) -> bool {
        self.shell == Shell::Bash
    }

    fn run(mut self, toks: &[Tok]) -> Result<Vec<Item>, String> {
        let mut i = 0;
        while i < toks.len() {
            tick(1);
            if self.cases.last() == Some(&CaseState::Patterns) {
                i = self.case_patterns(toks, i)?;
                continue;
            }
            let tok = &toks[i];
            match &tok.kind {
                TokKind::Word(w) => {
                    if !self.pending.is_empty() && (w.quoted || w.lit != "{") {
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
                    if self.arith_for {
                        return Err("`for (( … ))` without `do`".into());
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
                TokKind::Arith(w) => {
                    if self.cur.is_some() {
                        return Err("unexpected `((`".into());
                    }
                    self.items.push(Item::Arith {
                        word: w.clone(),
                        start: tok.start,
                        end: tok.end,
                    });
                    self.need_cmd = None;
                    self.cmd_ended = true;
                    self.seen = true;
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
                Open::Case => "`case` without `esac`",
            };
            return Err(what.into());
        }
        if !self.funcs.is_empty() {
            return Err("a function definition without a body".into());
        }
        if self.arith_for {
            return Err("`for (( … ))` without `do`".into());
        }
        Ok(self.items)
    }

    fn cmd(&mut self, start: usize) -> &mut Cmd {
        let after_pipe = self.after_pipe;
        let in_loop = self.do_depth > 0;
        self.cur.get_or_insert_with(|| Cmd {
            start,
            end: start,
            after_pipe,
            in_loop,
            ..Cmd::default()
        })
    }

    fn finish(&mut self) {
        if let Some(c) = self.cur.take() {
            let program = c.words.iter().find(|w| w.assignment().is_none());
            if let Some(p) = program
                && let Some(&fi) = self.open_names.get(&p.lit).and_then(|v| v.last())
                && let Some(f) = self.funcs.get_mut(fi)
            {
                f.self_calls += 1;
            }
            self.items.push(Item::Cmd(c));
            self.cmd_ended = true;
            self.seen = true;
        }
    }

    fn define(&mut self, name: String, start: usize) {
        self.pending.push(self.funcs.len());
        self.funcs.push(FnFrame {
            item: self.items.len(),
            name: name.clone(),
            level: None,
            self_calls: 0,
            pipes_before: 0,
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
        match what {
            Open::If => self.if_depth += 1,
            Open::Do => self.do_depth += 1,
            _ => {}
        }
        let level = self.stack.len();
        for fi in std::mem::take(&mut self.pending) {
            if let Some(f) = self.funcs.get_mut(fi) {
                f.level = Some(level);
                f.pipes_before = self.pipes;
                self.open_names.entry(f.name.clone()).or_default().push(fi);
            }
        }
        self.cmd_ended = false;
        self.seen = false;
    }

    fn close(&mut self, what: Open, word: &str, end: usize) -> Result<(), String> {
        self.finish();
        if self.stack.last() != Some(&what) {
            return Err(format!("unbalanced `{word}`"));
        }
        if !self.seen && what != Open::Case {
            return Err(format!("`{word}` closes an empty command list"));
        }
        self.stack.pop();
        match what {
            Open::If => self.if_depth -= 1,
            Open::Do => self.do_depth -= 1,
            _ => {}
        }
        let level = self.stack.len();
        while self
            .funcs
            .last()
            .is_some_and(|f| f.level.is_some_and(|l| l > level))
        {
            let Some(f) = self.funcs.pop() else { break };
            if let Some(v) = self.open_names.get_mut(&f.name) {
                v.pop();
            }
            if let Some(Item::Func {
                end: e, fork_bomb, ..
            }) = self.items.get_mut(f.item)
            {
                *e = end;
                *fork_bomb = f.self_calls > 0 && self.pipes > f.pipes_before;
            }
        }
        self.cmd_ended = true;
        self.seen = true;
        Ok(())
    }

    /// Refuses a keyword that needs a command list before it.
    fn after_list(&self, word: &str) -> Result<(), String> {
        if self.seen {
            Ok(())
        } else {
            Err(format!("`{word}` with no command before it"))
        }
    }

    /// Handles a reserved word at command start; returns the next token
    /// index, or `None` when the word is an ordinary command word.
    fn keyword(&mut self, toks: &[Tok], i: usize) -> Result<Option<usize>, String> {
        let TokKind::Word(w) = &toks[i].kind else {
            return Ok(None);
        };
        let end = toks[i].end;
        let bash = self.bash();
        match w.lit.as_str() {
            "do" if self.arith_for => {
                self.arith_for = false;
                self.open(Open::Do);
            }
            "{" => self.open(Open::Brace),
            "}" => self.close(Open::Brace, "}", end)?,
            "if" => self.open(Open::If),
            "fi" => self.close(Open::If, "fi", end)?,
            "do" => {
                self.after_list("do")?;
                self.open(Open::Do);
            }
            "done" => self.close(Open::Do, "done", end)?,
            "then" | "else" | "elif" => {
                if self.if_depth == 0 {
                    return Err(format!("`{}` outside `if`", w.lit));
                }
                self.after_list(&w.lit)?;
                self.seen = false;
            }
            "!" | "while" | "until" => self.seen = false,
            "case" => return self.case(toks, i).map(Some),
            "esac" => {
                if self.cases.last() != Some(&CaseState::Body) {
                    return Err("`esac` outside `case`".into());
                }
                self.cases.pop();
                self.close(Open::Case, "esac", end)?;
            }
            "for" => return self.for_loop(toks, i).map(Some),
            "select" if bash => return self.for_loop(toks, i).map(Some),
            "function" if bash => {
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
            "[[" if bash => return self.double_bracket(toks, i).map(Some),
            _ => return Ok(None),
        }
        self.need_cmd = None;
        Ok(Some(i + 1))
    }

    /// `for NAME [in WORDS…] ;` (and bash's `select`); bash's
    /// `for (( … ))` is one arithmetic token.
    fn for_loop(&mut self, toks: &[Tok], i: usize) -> Result<usize, String> {
        let start = toks[i].start;
        let name = match toks.get(i + 1).map(|t| &t.kind) {
            Some(TokKind::Word(n)) => n.clone(),
            Some(TokKind::Arith(w)) if self.bash() && w.lit.starts_with("((") => {
                self.items.push(Item::Arith {
                    word: w.clone(),
                    start,
                    end: toks[i + 1].end,
                });
                self.arith_for = true;
                self.seen = true;
                let mut j = i + 2;
                if matches!(
                    toks.get(j).map(|t| &t.kind),
                    Some(TokKind::Op(Op::Semi | Op::Newline))
                ) {
                    j += 1;
                }
                return Ok(j);
            }
            Some(TokKind::Op(Op::LParen)) => {
                return Err("`for (( … ))` is not a loop in this shell".into());
            }
            _ => return Err("`for` without a variable name".into()),
        };
        if !is_name(&name.lit) || name.quoted || name.dynamic {
            return Err(format!("`for {}`: not a variable name", name.lit));
        }
        let mut j = i + 2;
        let mut words = None;
        let mut end = toks[i + 1].end;
        if matches!(toks.get(j).map(|t| &t.kind), Some(TokKind::Word(w)) if w.lit == "in" && !w.quoted)
        {
            j += 1;
            let mut list = Vec::new();
            while let Some(TokKind::Word(w)) = toks.get(j).map(|t| &t.kind) {
                tick(1);
                if w.lit == "do" && !w.quoted {
                    break;
                }
                list.push(w.clone());
                end = toks[j].end;
                j += 1;
            }
            words = Some(list);
        }
        match toks.get(j).map(|t| &t.kind) {
            Some(TokKind::Op(Op::Semi | Op::Newline)) => j += 1,
            Some(TokKind::Word(w)) if w.lit == "do" => {}
            _ => return Err("`for` loop without `do`".into()),
        }
        while matches!(toks.get(j).map(|t| &t.kind), Some(TokKind::Op(Op::Newline))) {
            j += 1;
        }
        self.items.push(Item::For {
            name,
            words,
            start,
            end,
        });
        self.seen = true;
        Ok(j)
    }

    /// `case WORD in`: the subject is expanded; patterns follow.
    fn case(&mut self, toks: &[Tok], i: usize) -> Result<usize, String> {
        let Some(TokKind::Word(subject)) = toks.get(i + 1).map(|t| &t.kind) else {
            return Err("`case` without a word".into());
        };
        let mut j = i + 2;
        while matches!(toks.get(j).map(|t| &t.kind), Some(TokKind::Op(Op::Newline))) {
            j += 1;
        }
        if !matches!(toks.get(j).map(|t| &t.kind), Some(TokKind::Word(w)) if w.lit == "in" && !w.quoted)
        {
            return Err("`case` without `in`".into());
        }
        self.items.push(Item::Words {
            words: vec![subject.clone()],
            start: toks[i].start,
            end: toks[i + 1].end,
        });
        self.open(Open::Case);
        self.cases.push(CaseState::Patterns);
        Ok(j + 1)
    }

    /// One `[(] PATTERN [| PATTERN]… )` of a `case`, or its `esac`.
    fn case_patterns(&mut self, toks: &[Tok], mut i: usize) -> Result<usize, String> {
        while matches!(toks.get(i).map(|t| &t.kind), Some(TokKind::Op(Op::Newline))) {
            i += 1;
        }
        let Some(first) = toks.get(i) else {
            return Err("`case` without `esac`".into());
        };
        if let TokKind::Word(w) = &first.kind
            && w.lit == "esac"
            && !w.quoted
        {
            self.cases.pop();
            self.close(Open::Case, "esac", first.end)?;
            return Ok(i + 1);
        }
        if matches!(first.kind, TokKind::Op(Op::LParen)) {
            i += 1;
        }
        let start = toks.get(i).map_or(first.start, |t| t.start);
        let mut words = Vec::new();
        loop {
            tick(1);
            match toks.get(i).map(|t| &t.kind) {
                Some(TokKind::Word(w)) => words.push(w.clone()),
                _ => return Err("a `case` pattern must be a word".into()),
            }
            i += 1;
            match toks.get(i).map(|t| &t.kind) {
                Some(TokKind::Op(Op::Pipe)) => i += 1,
                Some(TokKind::Op(Op::RParen)) => break,
                _ => return Err("a `case` pattern must end with `)`".into()),
            }
        }
        self.items.push(Item::Words {
            words,
            start,
            end: toks[i].end,
        });
        if let Some(s) = self.cases.last_mut() {
            *s = CaseState::Body;
        }
        self.cmd_ended = false;
        Ok(i + 1)
    }

    /// `[[ … ]]`: everything up to `]]` is an argument (`<`, `>`, `&&`
    /// inside it compare or combine, they do not redirect or chain).
    fn double_bracket(&mut self, toks: &[Tok], i: usize) -> Result<usize, String> {
        let mut c = Cmd {
            start: toks[i].start,
            end: toks[i].end,
            after_pipe: self.after_pipe,
            in_loop: self.do_depth > 0,
            ..Cmd::default()
        };
        let mut j = i;
        loop {
            tick(1);
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
                TokKind::Op(_) | TokKind::Arith(_) => {}
            }
            j += 1;
        }
        self.cur = Some(c);
        self.need_cmd = None;
        Ok(j + 1)
    }

    fn op(&mut self, op: Op, end: usize) -> Result<(), String> {
        if matches!(op, Op::Pipe | Op::PipeAmp | Op::Amp) {
            self.pipes += 1;
        }
        if self.arith_for && !matches!(op, Op::Newline | Op::Semi) {
            return Err("`for (( … ))` without `do`".into());
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
                if self.cur.is_none() && !self.cmd_ended {
                    return Err(format!("`{}` without a command before it", op.as_str()));
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
            Op::DSemi => {
                if self.cases.last() != Some(&CaseState::Body) {
                    return Err("`;;` outside a `case`".into());
                }
                self.finish();
                if let Some(s) = self.cases.last_mut() {
                    *s = CaseState::Patterns;
                }
                self.after_pipe = false;
                self.cmd_ended = false;
            }
        }
        Ok(())
    }
}
