//! The LoCoMo data: conversations of two speakers over numbered sessions,
//! and questions whose `evidence` names the turns (`dia_id`) that hold the
//! answer.
//!
//! Two shapes are read, both as released by the LoCoMo authors:
//! - one conversation per file, a JSON object with `speaker_a`,
//!   `speaker_b`, `session_N`, `session_N_date_time` and `qa` at the top
//!   (the `locomo10_v2` files); the sample is named after the file stem;
//! - an array of samples `{sample_id, conversation: {…}, qa: […]}` (the
//!   single `locomo10.json` file PicoClaw downloads).
//!
//! Other keys (`events_session_N`, `session_N_summary`, `observation`…)
//! are ignored. Anything the benchmark needs and cannot read is an error
//! naming the file and the field; nothing is skipped silently.

use crate::error::BenchError;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// One conversation and its questions.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    /// The sample's name (`26`, `conv-26`, `synthetic-1`).
    pub sample: String,
    pub speakers: [String; 2],
    /// In session-number order.
    pub sessions: Vec<Session>,
    pub questions: Vec<Question>,
}

/// One session (one sitting) of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    /// `N` of `session_N`.
    pub number: u32,
    /// As written in the data, e.g. `1:56 pm on 8 May, 2023`.
    pub date_time: String,
    pub when: DateTime,
    pub turns: Vec<Turn>,
}

/// One dialog turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    /// As written in the data (`D3:5`); evidence ids are matched against it.
    pub dia_id: String,
    pub speaker: String,
    pub text: String,
}

impl Turn {
    /// The turn as PicoClaw stores it and as pincer's session holds it:
    /// `"Speaker: text"`.
    pub fn content(&self) -> String {
        format!("{}: {}", self.speaker, self.text)
    }
}

/// One annotated question.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    pub question: String,
    /// The raw `evidence` entries (an entry may hold several ids).
    pub evidence: Vec<String>,
    /// 1–4 answerable (multi-hop, temporal, open-domain, single-hop), 5
    /// adversarial.
    pub category: u8,
    /// `answer`, or `adversarial_answer` for category 5, as text.
    pub answer: Option<String>,
}

/// A session's date and time, to the minute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct DateTime {
    pub year: u16,
    pub month: u8,
    pub day: u8,
    pub hour: u8,
    pub minute: u8,
}

impl DateTime {
    /// `YYYY-MM-DDTHH:MM:SS.mmmZ`, with `millis` as the sub-second part.
    pub fn rfc3339(&self, millis: u16) -> String {
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:00.{:03}Z",
            self.year, self.month, self.day, self.hour, self.minute, millis
        )
    }

    /// `8 May 2023`.
    pub fn day_text(&self) -> String {
        let month = MONTHS
            .get(usize::from(self.month.saturating_sub(1)))
            .copied()
            .unwrap_or("?");
        format!("{} {month} {}", self.day, self.year)
    }
}

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

/// Parses LoCoMo's `1:56 pm on 8 May, 2023`.
pub fn parse_date_time(s: &str) -> Result<DateTime, String> {
    let bad = || {
        format!(
            "`{}` is not like `1:56 pm on 8 May, 2023`",
            s.escape_debug()
        )
    };
    let words: Vec<&str> = s.split_whitespace().collect();
    let [clock, ampm, on, day, month, year] = words.as_slice() else {
        return Err(bad());
    };
    if *on != "on" {
        return Err(bad());
    }
    let (h, m) = clock.split_once(':').ok_or_else(bad)?;
    let h: u8 = h.parse().map_err(|_| bad())?;
    let minute: u8 = m.parse().map_err(|_| bad())?;
    if !(1..=12).contains(&h) || minute > 59 || m.len() != 2 {
        return Err(bad());
    }
    let hour = match ampm.to_ascii_lowercase().as_str() {
        "am" => h % 12,
        "pm" => h % 12 + 12,
        _ => return Err(bad()),
    };
    let month = month.strip_suffix(',').ok_or_else(bad)?;
    let month = MONTHS
        .iter()
        .position(|n| n.eq_ignore_ascii_case(month))
        .ok_or_else(bad)?;
    let day: u8 = day.parse().map_err(|_| bad())?;
    let year: u16 = year.parse().map_err(|_| bad())?;
    if !(1..=31).contains(&day) || !(1970..=9999).contains(&year) {
        return Err(bad());
    }
    Ok(DateTime {
        year,
        // At most 11, see MONTHS.
        month: u8::try_from(month + 1).map_err(|_| bad())?,
        day,
        hour,
        minute,
    })
}

impl Conversation {
    /// Every turn, sessions in order.
    pub fn turns(&self) -> impl Iterator<Item = &Turn> {
        self.sessions.iter().flat_map(|s| &s.turns)
    }

    pub fn turn_count(&self) -> usize {
        self.sessions.iter().map(|s| s.turns.len()).sum()
    }
}

/// Loads every `*.json` file of `dir`, in file-name order.
pub fn load_dir(dir: &Path) -> Result<Vec<Conversation>, BenchError> {
    let entries = std::fs::read_dir(dir).map_err(|e| BenchError::io(dir, e))?;
    let mut files: Vec<PathBuf> = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| BenchError::io(dir, e))?;
        let path = entry.path();
        if path.extension().is_some_and(|x| x == "json") && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(BenchError::Invalid {
            field: "data",
            reason: format!("{} holds no *.json file", dir.display()),
        });
    }
    let mut out = Vec::new();
    for f in files {
        out.extend(load_file(&f)?);
    }
    Ok(out)
}

/// Loads one file (either shape, see the module doc).
pub fn load_file(path: &Path) -> Result<Vec<Conversation>, BenchError> {
    let bytes = std::fs::read(path).map_err(|e| BenchError::io(path, e))?;
    let v: Value = serde_json::from_slice(&bytes)
        .map_err(|e| BenchError::data(path, "file", format!("is not JSON: {e}")))?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    match v {
        Value::Object(obj) => Ok(vec![parse_flat(path, &stem, &obj)?]),
        Value::Array(samples) => samples
            .iter()
            .enumerate()
            .map(|(i, s)| parse_sample(path, i, s))
            .collect(),
        _ => Err(BenchError::data(
            path,
            "file",
            "is neither a conversation object nor an array of samples",
        )),
    }
}

/// One conversation object of the flat shape, named `sample`.
pub fn parse_flat(
    file: &Path,
    sample: &str,
    obj: &Map<String, Value>,
) -> Result<Conversation, BenchError> {
    let qa = obj
        .get("qa")
        .ok_or_else(|| BenchError::data(file, "qa", "is missing"))?;
    conversation(file, "", sample, obj, qa)
}

fn parse_sample(file: &Path, i: usize, v: &Value) -> Result<Conversation, BenchError> {
    let at = format!("[{i}].");
    let obj = v
        .as_object()
        .ok_or_else(|| BenchError::data(file, format!("[{i}]"), "is not an object"))?;
    let sample = match obj.get("sample_id") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(_) => {
            return Err(BenchError::data(
                file,
                format!("{at}sample_id"),
                "is not a non-empty string",
            ));
        }
        None => {
            return Err(BenchError::data(
                file,
                format!("{at}sample_id"),
                "is missing",
            ));
        }
    };
    let conv = obj
        .get("conversation")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            BenchError::data(
                file,
                format!("{at}conversation"),
                "is missing or not an object",
            )
        })?;
    let qa = obj
        .get("qa")
        .ok_or_else(|| BenchError::data(file, format!("{at}qa"), "is missing"))?;
    conversation(file, &format!("{at}conversation."), &sample, conv, qa)
}

fn conversation(
    file: &Path,
    at: &str,
    sample: &str,
    conv: &Map<String, Value>,
    qa: &Value,
) -> Result<Conversation, BenchError> {
    let speaker = |key: &str| -> Result<String, BenchError> {
        match conv.get(key) {
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
            _ => Err(BenchError::data(
                file,
                format!("{at}{key}"),
                "is missing or not a non-empty string",
            )),
        }
    };
    let speakers = [speaker("speaker_a")?, speaker("speaker_b")?];

    let mut numbers: Vec<(u32, &str)> = conv
        .keys()
        .filter_map(|k| {
            let n = k.strip_prefix("session_")?;
            (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                .then(|| n.parse().ok().map(|n: u32| (n, k.as_str())))
                .flatten()
        })
        .collect();
    numbers.sort();
    let mut sessions = Vec::with_capacity(numbers.len());
    for (number, key) in numbers {
        let field = |f: &str| format!("{at}{f}");
        let date_key = format!("{key}_date_time");
        let date_time = conv
            .get(&date_key)
            .and_then(Value::as_str)
            .ok_or_else(|| BenchError::data(file, field(&date_key), "is missing or not a string"))?
            .to_owned();
        let when = parse_date_time(&date_time)
            .map_err(|reason| BenchError::data(file, field(&date_key), reason))?;
        let list = conv[key]
            .as_array()
            .ok_or_else(|| BenchError::data(file, field(key), "is not an array of turns"))?;
        let mut turns = Vec::with_capacity(list.len());
        for (j, t) in list.iter().enumerate() {
            let str_field = |name: &str| -> Result<String, BenchError> {
                t.get(name)
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .ok_or_else(|| {
                        BenchError::data(
                            file,
                            field(&format!("{key}[{j}].{name}")),
                            "is missing or not a string",
                        )
                    })
            };
            let turn = Turn {
                dia_id: str_field("dia_id")?,
                speaker: str_field("speaker")?,
                text: str_field("text")?,
            };
            if turn.speaker.trim().is_empty() {
                return Err(BenchError::data(
                    file,
                    field(&format!("{key}[{j}].speaker")),
                    "is empty",
                ));
            }
            turns.push(turn);
        }
        sessions.push(Session {
            number,
            date_time,
            when,
            turns,
        });
    }
    if sessions.iter().all(|s| s.turns.is_empty()) {
        return Err(BenchError::data(
            file,
            format!("{at}session_N"),
            "no session holds a turn",
        ));
    }

    let list = qa
        .as_array()
        .ok_or_else(|| BenchError::data(file, "qa", "is not an array"))?;
    let mut questions = Vec::with_capacity(list.len());
    for (i, q) in list.iter().enumerate() {
        let field = |name: &str| format!("qa[{i}].{name}");
        let question = q
            .get("question")
            .and_then(Value::as_str)
            .ok_or_else(|| BenchError::data(file, field("question"), "is missing or not a string"))?
            .to_owned();
        let evidence = match q.get("evidence") {
            Some(Value::Array(a)) => a
                .iter()
                .enumerate()
                .map(|(j, e)| {
                    e.as_str().map(str::to_owned).ok_or_else(|| {
                        BenchError::data(file, field(&format!("evidence[{j}]")), "is not a string")
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
            _ => {
                return Err(BenchError::data(
                    file,
                    field("evidence"),
                    "is missing or not an array of strings",
                ));
            }
        };
        let category = q
            .get("category")
            .and_then(Value::as_u64)
            .and_then(|c| u8::try_from(c).ok())
            .filter(|c| (1..=5).contains(c))
            .ok_or_else(|| BenchError::data(file, field("category"), "is not an integer 1 to 5"))?;
        let answer = q
            .get("answer")
            .or_else(|| q.get("adversarial_answer"))
            .and_then(|a| match a {
                Value::String(s) => Some(s.clone()),
                Value::Null => None,
                other => Some(other.to_string()),
            });
        questions.push(Question {
            question,
            evidence,
            category,
            answer,
        });
    }
    Ok(Conversation {
        sample: sample.to_owned(),
        speakers,
        sessions,
        questions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        let d = parse_date_time("1:56 pm on 8 May, 2023").expect("date");
        assert_eq!(d.rfc3339(7), "2023-05-08T13:56:00.007Z");
        assert_eq!(d.day_text(), "8 May 2023");
        let d = parse_date_time("12:09 am on 13 September, 2023").expect("date");
        assert_eq!((d.hour, d.minute, d.month, d.day), (0, 9, 9, 13));
        let d = parse_date_time("12:30 pm on 1 January, 2024").expect("date");
        assert_eq!(d.hour, 12);
        for bad in [
            "",
            "1:56 pm 8 May, 2023",
            "13:56 pm on 8 May, 2023",
            "1:5 pm on 8 May, 2023",
            "1:56 xm on 8 May, 2023",
            "1:56 pm on 8 Mai, 2023",
            "1:56 pm on 8 May 2023",
            "1:56 pm on 32 May, 2023",
        ] {
            assert!(parse_date_time(bad).is_err(), "{bad:?}");
        }
    }
}
