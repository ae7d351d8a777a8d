//! Loading: both LoCoMo shapes read the same conversation, and bad data is
//! an error naming the file and the field, never a skipped question.

use crate::fixture_dir;
use pincer_membench::load_dir;
use serde_json::{Value, json};

fn fixture_value() -> Value {
    let text = std::fs::read_to_string(fixture_dir().join("conv-fixture.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Loads `v` written as the only file of a fresh directory.
fn load(v: &Value) -> Result<Vec<pincer_membench::Conversation>, pincer_membench::BenchError> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("x.json"), serde_json::to_vec(v).unwrap()).unwrap();
    load_dir(dir.path())
}

#[test]
fn both_shapes_read_the_same_conversation() {
    let flat = fixture_value();
    let mut conversation = flat.as_object().unwrap().clone();
    let qa = conversation.remove("qa").unwrap();
    let samples = json!([{ "sample_id": "conv-99", "conversation": conversation, "qa": qa }]);
    let mut a = load(&flat).unwrap();
    let b = load(&samples).unwrap();
    assert_eq!(a[0].sample, "x");
    assert_eq!(b[0].sample, "conv-99");
    a[0].sample = "conv-99".into();
    assert_eq!(a, b);
    let c = &a[0];
    assert_eq!(c.speakers, ["Maren", "Tobias"]);
    assert_eq!(c.sessions.len(), 3);
    assert_eq!(c.sessions[1].date_time, "6:30 pm on 17 March, 2024");
    assert_eq!(c.questions.len(), 12);
    assert_eq!(c.questions[8].answer.as_deref(), Some("none"));
}

#[test]
fn bad_data_names_the_field() {
    type Breaker = Box<dyn Fn(&mut Value)>;
    let cases: Vec<(&str, Breaker)> = vec![
        (
            "qa",
            Box::new(|v| drop(v.as_object_mut().unwrap().remove("qa"))),
        ),
        ("speaker_b", Box::new(|v| v["speaker_b"] = json!(""))),
        (
            "session_2_date_time",
            Box::new(|v| v["session_2_date_time"] = json!("yesterday")),
        ),
        (
            "session_1",
            Box::new(|v| v["session_1"] = json!({"not": "a list"})),
        ),
        (
            "session_3[1].text",
            Box::new(|v| v["session_3"][1]["text"] = json!(7)),
        ),
        (
            "qa[2].category",
            Box::new(|v| v["qa"][2]["category"] = json!(9)),
        ),
        (
            "qa[0].evidence",
            Box::new(|v| v["qa"][0]["evidence"] = json!("D1:1")),
        ),
        (
            "qa[4].evidence[1]",
            Box::new(|v| v["qa"][4]["evidence"][1] = json!(3)),
        ),
        (
            "qa[5].question",
            Box::new(|v| drop(v["qa"][5].as_object_mut().unwrap().remove("question"))),
        ),
    ];
    for (want, break_it) in cases {
        let mut v = fixture_value();
        break_it(&mut v);
        let err = load(&v).expect_err(want);
        assert_eq!(err.field(), Some(want), "{err}");
        assert!(err.to_string().contains("x.json"), "{err}");
    }
    let samples = json!([{ "conversation": {}, "qa": [] }]);
    assert_eq!(load(&samples).unwrap_err().field(), Some("[0].sample_id"));
    assert_eq!(load(&json!(3)).unwrap_err().field(), Some("file"));

    let empty = tempfile::tempdir().unwrap();
    assert_eq!(load_dir(empty.path()).unwrap_err().field(), Some("data"));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.json"), b"{not json").unwrap();
    assert_eq!(load_dir(dir.path()).unwrap_err().field(), Some("file"));
}
