//! The hardware tools through the real gate on the simulated board: every
//! autonomy level × every operation × the approver's answer, asserting the
//! bus transactions the board recorded (a refused call must leave none) and
//! the audit entries every attempt leaves.

use pincer_core::ToolCall;
use pincer_core::audit::Audit;
use pincer_core::gate::{CallOutcome, Gate, GatePolicy, Refusal};
use pincer_core::policy::Autonomy;
use pincer_core::tool::Tool;
use pincer_hw::{Hardware, HardwareConfig, SimTransaction};
use pincer_test_support::Answer;
use pincer_tools::hw::hardware_tools;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

struct Board {
    _tmp: tempfile::TempDir,
    hw: Arc<Hardware>,
    tools: Vec<Arc<dyn Tool>>,
    audit: Arc<Audit>,
}

fn board() -> Board {
    let tmp = tempfile::tempdir().unwrap();
    let detection = pincer_hw::detect(Some("sim"), "auto", Path::new("/nonexistent")).unwrap();
    let cfg = HardwareConfig {
        camera_min_interval_ms: 0,
        ..HardwareConfig::default()
    };
    let hw = Arc::new(Hardware::open(&cfg, detection).unwrap());
    let tools = hardware_tools(hw.clone(), tmp.path().join("camera"));
    let audit = Arc::new(Audit::open(&tmp.path().join("audit")).unwrap());
    Board {
        _tmp: tmp,
        hw,
        tools,
        audit,
    }
}

impl Board {
    fn transactions(&self) -> Vec<SimTransaction> {
        self.hw.sim().unwrap().transactions()
    }

    async fn call(&self, gate: &Gate, tool: &str, args: Value) -> CallOutcome {
        let t = self
            .tools
            .iter()
            .find(|t| t.name() == tool)
            .unwrap()
            .clone();
        let c = ToolCall::new("c1", tool, &args);
        gate.call("s", Some(t), &c, &|_| {}).await.unwrap()
    }
}

fn gate(b: &Board, autonomy: Autonomy, approver: Arc<Answer>) -> Gate {
    let policy = GatePolicy {
        autonomy,
        approval_timeout: Duration::from_secs(5),
        deny_tools: vec![],
    };
    Gate::new(policy, "agent:test", b.audit.clone(), approver)
}

/// (tool, arguments, risk, the transaction a run leaves)
fn operations() -> Vec<(&'static str, Value, &'static str, SimTransaction)> {
    use pincer_hw::Level;
    vec![
        ("i2c_scan", json!({}), "low", SimTransaction::I2cScan),
        (
            "i2c_read",
            json!({"address": "0x48", "register": 0, "length": 2}),
            "medium",
            SimTransaction::I2cRead {
                addr: 0x48,
                register: Some(0),
                len: 2,
            },
        ),
        (
            "i2c_write",
            json!({"address": 72, "data": [1, 0x60, 0xa0]}),
            "high",
            SimTransaction::I2cWrite {
                addr: 0x48,
                data: vec![1, 0x60, 0xa0],
            },
        ),
        (
            "spi_transfer",
            json!({"data": "0xde 0xad"}),
            "high",
            SimTransaction::SpiTransfer { len: 2 },
        ),
        (
            "gpio_read",
            json!({"pin": 7}),
            "medium",
            SimTransaction::GpioRead { pin: 7 },
        ),
        (
            "gpio_write",
            json!({"pin": 11, "level": "high"}),
            "high",
            SimTransaction::GpioWrite {
                pin: 11,
                level: Level::High,
            },
        ),
        (
            "camera_capture",
            json!({}),
            "medium",
            SimTransaction::CameraCapture,
        ),
    ]
}

#[tokio::test]
async fn every_autonomy_level_and_operation_through_the_gate() {
    // (autonomy, approver says yes) → whether the call runs, per risk, and
    // whether a person is asked.
    let levels = [
        (Autonomy::Readonly, true),
        (Autonomy::Supervised, true),
        (Autonomy::Supervised, false),
        (Autonomy::Full, false),
    ];
    for (autonomy, yes) in levels {
        for (tool, args, risk, tx) in operations() {
            let b = board();
            let approver = Arc::new(Answer::new(yes));
            let g = gate(&b, autonomy, approver.clone());
            let out = b.call(&g, tool, args.clone()).await;
            let should_ask = autonomy == Autonomy::Supervised && risk != "low";
            let runs = match autonomy {
                Autonomy::Readonly => false,
                Autonomy::Supervised => risk == "low" || yes,
                Autonomy::Full => true,
            };
            let case = format!("{autonomy:?} (approve: {yes}) × {tool}");
            assert_eq!(
                approver.asked().len(),
                usize::from(should_ask),
                "{case}: asked"
            );
            let txs = b.transactions();
            if runs {
                assert!(matches!(out, CallOutcome::Ran(Ok(_))), "{case}: {out:?}");
                assert_eq!(txs, vec![tx.clone()], "{case}: the bus saw the call");
            } else {
                assert!(
                    txs.is_empty(),
                    "{case}: a refused call reached the bus: {txs:?}"
                );
                let want = if autonomy == Autonomy::Readonly {
                    Refusal::Blocked
                } else {
                    Refusal::Denied
                };
                assert!(
                    matches!(out, CallOutcome::Refused { refusal, .. } if refusal == want),
                    "{case}: {out:?}"
                );
            }
            // The trail: a gate.decision naming op, bus, risk, decision,
            // actor; a tool.call with the outcome when it ran.
            let log = b.audit.log(None, None).unwrap();
            let d = log.iter().find(|e| e.kind == "gate.decision").unwrap();
            assert_eq!(d.actor, "agent:test", "{case}");
            assert_eq!(d.data["risk"], risk, "{case}");
            assert_eq!(d.data["hardware"], true, "{case}");
            assert_eq!(d.data["subject"]["op"], tool, "{case}");
            assert!(d.data["subject"]["bus"].is_string(), "{case}: {}", d.data);
            match &tx {
                SimTransaction::I2cRead { len, .. } => {
                    assert_eq!(d.data["subject"]["address"], "0x48", "{case}");
                    assert_eq!(d.data["subject"]["bytes_read"], *len, "{case}");
                }
                SimTransaction::I2cWrite { data, .. } => {
                    assert_eq!(d.data["subject"]["address"], "0x48", "{case}");
                    assert_eq!(d.data["subject"]["bytes_written"], data.len(), "{case}");
                }
                SimTransaction::SpiTransfer { len } => {
                    assert_eq!(d.data["subject"]["bytes_written"], *len, "{case}");
                }
                SimTransaction::GpioRead { pin } | SimTransaction::GpioWrite { pin, .. } => {
                    assert_eq!(d.data["subject"]["pin"], *pin, "{case}");
                }
                _ => {}
            }
            let decision = d.data["decision"].as_str().unwrap();
            let want = match (runs, should_ask) {
                (true, true) => "approved",
                (true, false) => "allowed",
                (false, true) => "denied",
                (false, false) => "blocked",
            };
            assert_eq!(decision, want, "{case}");
            let ran = log.iter().find(|e| e.kind == "tool.call");
            assert_eq!(ran.is_some(), runs, "{case}");
            if let Some(r) = ran {
                assert_eq!(r.data["status"], "ok", "{case}: {}", r.data);
                assert_eq!(r.data["subject"]["op"], tool, "{case}");
            }
            if should_ask {
                assert!(log.iter().any(|e| e.kind == "approval.request"), "{case}");
            }
            assert!(b.audit.verify().unwrap().defect.is_none());
        }
    }
}

#[tokio::test]
async fn bad_hardware_arguments_never_reach_the_bus_or_a_person() {
    let cases: &[(&str, Value, &str)] = &[
        ("i2c_read", json!({"address": "0x00"}), "address"),
        ("i2c_read", json!({"address": "0x02"}), "address"),
        ("i2c_read", json!({"address": "0x78"}), "address"),
        ("i2c_read", json!({"address": 128}), "address"),
        ("i2c_read", json!({"address": "0xq8"}), "address"),
        (
            "i2c_read",
            json!({"address": "0x48", "length": 0}),
            "length",
        ),
        (
            "i2c_read",
            json!({"address": "0x48", "length": 257}),
            "length",
        ),
        (
            "i2c_read",
            json!({"address": "0x48", "register": 256}),
            "register",
        ),
        ("i2c_read", json!({"address": "0x48", "bus": 2}), "bus"),
        (
            "i2c_read",
            json!({"address": "0x48", "speed": 1}),
            "unknown argument `speed`",
        ),
        ("i2c_read", json!({}), "address"),
        (
            "i2c_write",
            json!({"address": "0x48", "data": vec![0u8; 257]}),
            "data",
        ),
        ("i2c_write", json!({"address": "0x48", "data": []}), "data"),
        (
            "i2c_write",
            json!({"address": "0x48", "data": "0xZZ"}),
            "data",
        ),
        (
            "i2c_write",
            json!({"address": "0x48", "data": [300]}),
            "data",
        ),
        ("spi_transfer", json!({"data": vec![0u8; 4097]}), "data"),
        (
            "spi_transfer",
            json!({"data": "00", "device": "../x"}),
            "device",
        ),
        (
            "spi_transfer",
            json!({"data": "00", "device": "+0.+0"}),
            "device",
        ),
        ("i2c_read", json!({"address": "+72"}), "address"),
        (
            "i2c_read",
            json!({"address": "0x48", "register": "+1"}),
            "register",
        ),
        (
            "i2c_read",
            json!({"address": "0x48", "length": "+2"}),
            "length",
        ),
        ("gpio_read", json!({"pin": "+7"}), "pin"),
        ("gpio_read", json!({"pin": 99}), "pin"),
        ("gpio_read", json!({"pin": 0}), "pin"),
        ("gpio_read", json!({"pin": 3}), "pinmux"),
        ("gpio_write", json!({"pin": 24, "level": 1}), "pinmux"),
        ("gpio_write", json!({"pin": 11, "level": "maybe"}), "level"),
        ("i2c_scan", json!([1, 2]), "arguments"),
    ];
    for autonomy in [Autonomy::Readonly, Autonomy::Supervised, Autonomy::Full] {
        for (tool, args, field) in cases {
            let b = board();
            let approver = Arc::new(Answer::new(true));
            let g = gate(&b, autonomy, approver.clone());
            let out = b.call(&g, tool, args.clone()).await;
            let case = format!("{autonomy:?} {tool} {args}");
            let CallOutcome::Refused { refusal, text } = out else {
                panic!("{case} ran: {out:?}")
            };
            assert_eq!(refusal, Refusal::Invalid, "{case}: {text}");
            assert!(text.contains(field), "{case}: `{text}` should name {field}");
            assert_eq!(approver.asked().len(), 0, "{case}: nobody is asked");
            assert!(b.transactions().is_empty(), "{case}: nothing on the bus");
            let log = b.audit.log(None, None).unwrap();
            assert_eq!(log.len(), 1, "{case}");
            assert_eq!(log[0].data["decision"], "invalid", "{case}");
        }
    }
}

#[tokio::test]
async fn a_read_returns_the_sensor_value_and_a_failed_read_is_recorded() {
    let b = board();
    let approver = Arc::new(Answer::new(true));
    let g = gate(&b, Autonomy::Full, approver);
    let out = b
        .call(
            &g,
            "i2c_read",
            json!({"address": "0x48", "register": "0x00", "length": 2}),
        )
        .await;
    let CallOutcome::Ran(result) = out else {
        panic!("{out:?}")
    };
    let text = result.unwrap();
    assert!(text.contains("17 80") && text.contains("23.5 °C"), "{text}");
    // Nothing at 0x50: the call ran, failed, and says so in the trail.
    let out = b.call(&g, "i2c_read", json!({"address": "0x50"})).await;
    let CallOutcome::Ran(result) = out else {
        panic!("{out:?}")
    };
    let err = result.unwrap_err().to_string();
    assert!(err.contains("no device"), "{err}");
    let log = b.audit.log(None, None).unwrap();
    let failed = log.iter().rfind(|e| e.kind == "tool.call").unwrap();
    assert_eq!(failed.data["status"], "error");
    assert_eq!(failed.data["subject"]["address"], "0x50");
}

/// On a real board the subject, the approval prompt and the trail name the
/// configured device — the one the call will open — and an agent may use
/// only that bus and that SPI device. Nothing is opened to judge a call.
#[test]
fn on_a_linux_board_calls_name_the_configured_devices_and_agents_keep_to_them() {
    let tmp = tempfile::tempdir().unwrap();
    let detection = pincer_hw::detect(Some("rpi"), "auto", Path::new("/nonexistent")).unwrap();
    let cfg = HardwareConfig {
        i2c_bus: Some(3),
        spi_device: Some((1, 1)),
        ..HardwareConfig::default()
    };
    let hw = Arc::new(Hardware::open(&cfg, detection).unwrap());
    let tools = hardware_tools(hw, tmp.path().join("camera"));
    let tool = |n: &str| tools.iter().find(|t| t.name() == n).unwrap().clone();
    let a = tool("spi_transfer").assess(&json!({"data": "00 01"}));
    assert_eq!(
        a.subject.as_ref().unwrap()["bus"],
        "/dev/spidev1.1",
        "{a:?}"
    );
    assert!(a.why.contains("/dev/spidev1.1"), "{}", a.why);
    let a = tool("i2c_read").assess(&json!({"address": "0x48"}));
    assert_eq!(a.subject.as_ref().unwrap()["bus"], "/dev/i2c-3");
    assert!(a.why.contains("/dev/i2c-3"), "{}", a.why);
    let a = tool("i2c_read").assess(&json!({"address": "0x48", "bus": 3}));
    assert!(a.invalid.is_none(), "the configured bus is fine: {a:?}");
    for (name, args, field) in [
        ("i2c_scan", json!({"bus": 0}), "bus"),
        ("i2c_read", json!({"address": "0x48", "bus": 7}), "bus"),
        (
            "spi_transfer",
            json!({"data": "00", "device": "0.0"}),
            "device",
        ),
        (
            "spi_transfer",
            json!({"data": "00", "device": "+1.+1"}),
            "device",
        ),
    ] {
        let a = tool(name).assess(&args);
        let why = a
            .invalid
            .unwrap_or_else(|| panic!("{name} {args}: allowed"));
        assert!(why.contains(field), "{why}");
    }
    // A person may name another bus: `pincer hw` parses as Caller::Person.
    let facts = pincer_tools::hw::Facts::of(
        &Hardware::open(
            &cfg,
            pincer_hw::detect(Some("rpi"), "auto", Path::new("/nonexistent")).unwrap(),
        )
        .unwrap(),
    );
    let r = pincer_tools::hw::parse_request(
        pincer_tools::hw::HwKind::I2cScan,
        &json!({"bus": 0}),
        &facts,
        pincer_tools::hw::Caller::Person,
    )
    .unwrap();
    assert_eq!(r.subject(&facts)["bus"], "/dev/i2c-0");
}
