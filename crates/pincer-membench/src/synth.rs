//! A seeded synthetic conversation set in LoCoMo's shape, for quick runs and
//! tests without the real data: two speakers chat over weekly sessions;
//! small talk surrounds a few facts (a pet, lessons, a relative's city, a
//! dish, a trip), each stated once and referred back to in a later session,
//! and questions of every category point at those turns.
//!
//! The same seed always gives the same conversations.

use crate::data::{Conversation, Question, Session, Turn, parse_date_time};

/// What to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SynthSpec {
    pub seed: u64,
    pub conversations: usize,
    /// Sessions per conversation (4 to 40).
    pub sessions: usize,
    /// Turns per session (at least 8).
    pub turns_per_session: usize,
}

impl Default for SynthSpec {
    fn default() -> Self {
        Self {
            seed: 1,
            conversations: 2,
            sessions: 24,
            turns_per_session: 28,
        }
    }
}

/// splitmix64: small, seeded, good enough to shuffle templates.
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

const NAMES: &[&str] = &[
    "Ada", "Bruno", "Chiara", "Dmitri", "Esme", "Farid", "Greta", "Hiro", "Ines", "Jonah",
];

const SMALL_TALK: &[&str] = &[
    "How was your week?",
    "Pretty busy, work has been hectic lately.",
    "That sounds exhausting, make sure you rest a bit.",
    "Did you catch the match on Sunday?",
    "Not really, I spent the afternoon cleaning the garage.",
    "Ha, I know that feeling all too well.",
    "The weather has been lovely these last few days.",
    "I should get outside more often, honestly.",
    "Same here, let's plan something soon.",
    "Anything new on your side?",
    "Not much, just the usual routine.",
    "I finally fixed the squeaky door in the hallway.",
    "Good for you, that would drive me mad.",
    "I've been sleeping better since I cut out late coffee.",
    "That's a smart move, I might try it too.",
    "Talk soon, take care!",
    "You too, say hi to everyone for me.",
    "I watched a documentary about volcanoes yesterday.",
    "Oh nice, was it any good?",
    "It was fascinating, the footage was incredible.",
];

/// One fact: what states it, what refers back to it, and the questions.
struct Fact {
    slot: &'static [&'static str],
    intro: &'static str,
    back: &'static str,
    /// Category 4: about the intro.
    single: &'static str,
    /// Category 2: when the intro was said.
    when: &'static str,
    /// Category 1: needs the intro and the back-reference.
    multi: &'static str,
    /// Category 3: an inference from the intro.
    open: &'static str,
}

const FACTS: &[Fact] = &[
    Fact {
        slot: &["Biscuit", "Pepper", "Mochi", "Ziggy", "Clover"],
        intro: "Big news: I adopted a rescue puppy and named him {x}!",
        back: "{x} chewed through my headphone cable this morning, the little rascal.",
        single: "What is the name of the puppy {s} adopted?",
        when: "When did {s} adopt a rescue puppy?",
        multi: "What did the puppy {s} adopted chew through?",
        open: "Would {s} likely need a pet sitter when travelling?",
    },
    Fact {
        slot: &["cello", "banjo", "clarinet", "harp", "accordion"],
        intro: "I signed up for {x} lessons on Tuesday evenings.",
        back: "My {x} teacher said my scales are finally even.",
        single: "Which instrument is {s} taking lessons for?",
        when: "When did {s} sign up for music lessons?",
        multi: "What did the teacher of {s}'s instrument lessons say about the scales?",
        open: "Would {s} enjoy a concert featuring string or wind instruments?",
    },
    Fact {
        slot: &["Lisbon", "Oslo", "Nairobi", "Montreal", "Kyoto"],
        intro: "My sister just moved to {x} for a job at the aquarium.",
        back: "I'm flying out to {x} next month to see my sister's new flat.",
        single: "Where did {s}'s sister move for her job?",
        when: "When did {s}'s sister move for the aquarium job?",
        multi: "Why is {s} flying out next month, and to which city?",
        open: "Does {s} have family living abroad?",
    },
    Fact {
        slot: &[
            "sourdough",
            "baklava",
            "focaccia",
            "croissants",
            "empanadas",
        ],
        intro: "I've been baking {x} every weekend, my kitchen smells amazing.",
        back: "My neighbours asked for a batch of my {x} for their party.",
        single: "What has {s} been baking every weekend?",
        when: "When did {s} start baking on weekends?",
        multi: "What did {s}'s neighbours ask for a batch of?",
        open: "Is {s} likely to enjoy a cooking class?",
    },
    Fact {
        slot: &["Patagonia", "Iceland", "Sardinia", "Tasmania", "Hokkaido"],
        intro: "We booked a hiking trip to {x} for the summer holidays.",
        back: "I bought new boots for the {x} hike, breaking them in now.",
        single: "Where is {s} going hiking in the summer?",
        when: "When did {s} book the hiking trip?",
        multi: "What did {s} buy for the summer hike, and where is it?",
        open: "Does {s} enjoy outdoor activities?",
    },
];

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

/// Generates `spec.conversations` conversations.
pub fn generate(spec: &SynthSpec) -> Vec<Conversation> {
    // Enough free turns of each speaker for every fact's two turns.
    let sessions = spec.sessions.clamp(4, 40);
    let per = spec.turns_per_session.max(8);
    (0..spec.conversations)
        .map(|c| {
            let mut rng = Rng(spec.seed ^ (c as u64).wrapping_mul(0xA24B_AED4_963E_E407));
            conversation(&mut rng, c, sessions, per)
        })
        .collect()
}

fn conversation(rng: &mut Rng, c: usize, n_sessions: usize, per: usize) -> Conversation {
    let a = rng.below(NAMES.len());
    let b = (a + 1 + rng.below(NAMES.len() - 1)) % NAMES.len();
    let speakers = [NAMES[a].to_owned(), NAMES[b].to_owned()];

    // Small talk everywhere, alternating speakers.
    let mut texts: Vec<Vec<String>> = (0..n_sessions)
        .map(|_| (0..per).map(|_| rng.pick(SMALL_TALK).to_owned()).collect())
        .collect();
    // Each fact: stated in the first half by one speaker, referred back to
    // in a later session by the same speaker (so at an index of theirs).
    let mut placed = Vec::new();
    let mut taken: Vec<(usize, usize)> = Vec::new();
    let mut free_slot = |rng: &mut Rng, sessions: std::ops::Range<usize>, parity: usize| loop {
        let s = sessions.start + rng.below(sessions.len());
        let t = 2 * rng.below(per / 2) + parity;
        if t < per && !taken.contains(&(s, t)) {
            taken.push((s, t));
            return (s, t);
        }
    };
    for fact in FACTS {
        let who = rng.below(2);
        let x = rng.pick(fact.slot);
        let intro = free_slot(rng, 0..n_sessions / 2, who);
        let back = free_slot(rng, intro.0 + 1..n_sessions, who);
        texts[intro.0][intro.1] = fact.intro.replace("{x}", x);
        texts[back.0][back.1] = fact.back.replace("{x}", x);
        placed.push((fact, who, intro, back));
    }

    let mut sessions = Vec::with_capacity(n_sessions);
    for (si, list) in texts.into_iter().enumerate() {
        let month = (si / 4) % 12;
        let day = 1 + (si % 4) * 7;
        let hour = 1 + rng.below(12);
        let minute = rng.below(60);
        let ampm = if rng.below(2) == 0 { "am" } else { "pm" };
        let date_time = format!("{hour}:{minute:02} {ampm} on {day} {}, 2023", MONTHS[month]);
        // Built from the parts above, so it always parses.
        let when = parse_date_time(&date_time).unwrap_or(crate::data::DateTime {
            year: 2023,
            month: 1,
            day: 1,
            hour: 0,
            minute: 0,
        });
        let turns = list
            .into_iter()
            .enumerate()
            .map(|(ti, text)| Turn {
                dia_id: format!("D{}:{}", si + 1, ti + 1),
                speaker: speakers[ti % 2].clone(),
                text,
            })
            .collect();
        sessions.push(Session {
            number: u32::try_from(si + 1).unwrap_or(u32::MAX),
            date_time,
            when,
            turns,
        });
    }

    let id = |(s, t): (usize, usize)| format!("D{}:{}", s + 1, t + 1);
    let mut questions = Vec::new();
    for (fact, who, intro, back) in placed {
        let s = &speakers[who];
        let other = &speakers[1 - who];
        let q = |template: &str, name: &str| template.replace("{s}", name);
        let mut push = |question: String, evidence: Vec<String>, category: u8, answered: bool| {
            questions.push(Question {
                question,
                evidence,
                category,
                answer: answered.then(|| "see evidence".to_owned()),
            });
        };
        push(q(fact.single, s), vec![id(intro)], 4, true);
        push(q(fact.when, s), vec![id(intro)], 2, true);
        push(q(fact.multi, s), vec![id(intro), id(back)], 1, true);
        push(q(fact.open, s), vec![id(intro)], 3, true);
        push(q(fact.single, other), vec![id(intro)], 5, false);
    }
    Conversation {
        sample: format!("synthetic-{}", c + 1),
        speakers,
        sessions,
        questions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_set_and_every_evidence_resolves() {
        let spec = SynthSpec::default();
        let a = generate(&spec);
        assert_eq!(a, generate(&spec));
        assert_ne!(a, generate(&SynthSpec { seed: 2, ..spec }));
        for c in &a {
            assert!(c.turn_count() >= 100, "{} turns", c.turn_count());
            let ids: Vec<&str> = c.turns().map(|t| t.dia_id.as_str()).collect();
            for q in &c.questions {
                for e in &q.evidence {
                    assert!(ids.contains(&e.as_str()), "{e}");
                }
            }
            let cats: Vec<u8> = c.questions.iter().map(|q| q.category).collect();
            for k in 1..=5 {
                assert!(cats.contains(&k));
            }
        }
    }
}
