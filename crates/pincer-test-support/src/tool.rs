use pincer_core::gate::Permit;
use pincer_core::policy::Risk;
use pincer_core::provider::BoxFuture;
use pincer_core::tool::{Assessment, Tool, ToolError};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// A tool whose risk is `risk`, or high when the arguments say
/// `"danger": true`; it records the arguments it ran with and replies
/// `reply`.
#[derive(Debug)]
pub struct Probe {
    name: String,
    risk: Risk,
    deny: bool,
    reply: String,
    ran: Mutex<Vec<Value>>,
}

impl Probe {
    pub fn new(name: &str, risk: Risk) -> Probe {
        Probe {
            name: name.into(),
            risk,
            deny: false,
            reply: "done".into(),
            ran: Mutex::new(Vec::new()),
        }
    }

    pub fn arc(name: &str, risk: Risk) -> Arc<Probe> {
        Arc::new(Probe::new(name, risk))
    }

    /// On the tool's own deny list: blocked at every level.
    pub fn denied(mut self) -> Probe {
        self.deny = true;
        self
    }

    pub fn replying(mut self, reply: &str) -> Probe {
        self.reply = reply.into();
        self
    }

    /// The arguments of every run, in order.
    pub fn ran(&self) -> Vec<Value> {
        self.ran.lock().unwrap().clone()
    }
}

impl Tool for Probe {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        "probe"
    }
    fn parameters_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn assess(&self, args: &Value) -> Assessment {
        let risk = if args["danger"] == true {
            Risk::High
        } else {
            self.risk
        };
        let mut a = Assessment::new(risk, format!("probe says {}", risk.as_str()));
        if self.deny {
            a.denied = Some("probe is on the built-in deny list".into());
        }
        a
    }
    fn execute<'a>(&'a self, permit: Permit<'a>) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            self.ran.lock().unwrap().push(permit.args().clone());
            Ok(self.reply.clone())
        })
    }
}
