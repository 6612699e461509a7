//! The compiled policy never traps: random bytes, and valid requests with
//! random damage, always get a well-formed response from `validate` and
//! `validate_settings`, never a waPC error.

mod common;

use common::{policy, request, root, session};
use kwrun::Session;
use serde_json::Value;

/// xorshift64*: seeded, so a failure is reproducible from the printed case.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Random bytes, or a real payload with bytes flipped, inserted, cut off.
fn damaged(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    if rng.below(4) == 0 {
        return (0..rng.below(512)).map(|_| rng.next() as u8).collect();
    }
    let mut bytes = seeds[rng.below(seeds.len())].clone();
    for _ in 0..=rng.below(4) {
        if bytes.is_empty() {
            break;
        }
        let at = rng.below(bytes.len());
        match rng.below(4) {
            0 => bytes[at] = rng.next() as u8,
            1 => {
                const JSON_BYTES: &[u8] = b"{}[]\",:\\0-9en";
                bytes.insert(at, JSON_BYTES[rng.below(JSON_BYTES.len())]);
            }
            2 => {
                bytes.remove(at);
            }
            _ => bytes.truncate(at),
        }
    }
    bytes
}

fn assert_well_formed(response: &[u8], key: &str, case: &[u8]) {
    let v: Value = serde_json::from_slice(response).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}) for input {:?}",
            String::from_utf8_lossy(case)
        )
    });
    assert!(
        v[key].is_boolean(),
        "no boolean {key:?} in {v} for input {:?}",
        String::from_utf8_lossy(case)
    );
}

#[test]
fn validate_never_traps() {
    let p = policy();
    let seeds: Vec<Vec<u8>> = std::fs::read_dir(root().join("test_data"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|path| {
            let req = request(path.file_name().unwrap().to_str().unwrap());
            serde_json::to_vec(&serde_json::json!({"request": req, "settings": {}})).unwrap()
        })
        .collect();
    let mut rng = Rng(0x005e_ed0f_ca7a);
    for i in 0..3000 {
        let payload = damaged(&mut rng, &seeds);
        // Alternate: no cluster at all, and a cluster that answers.
        let s = if i % 2 == 0 {
            Session::none()
        } else {
            session("kata-workers.yml")
        };
        let out = p.call_raw("validate", &payload, s).unwrap_or_else(|e| {
            panic!(
                "trap: {e:#} for input {:?}",
                String::from_utf8_lossy(&payload)
            )
        });
        assert_well_formed(&out, "accepted", &payload);
    }
}

#[test]
fn validate_settings_never_traps() {
    let p = policy();
    let seeds = vec![
        std::fs::read(root().join("policy-settings.json")).unwrap(),
        br#"{"kataNodeSelector":"a in (b, c), !d, e>5","noFeasibleNode":"reject"}"#.to_vec(),
        b"null".to_vec(),
    ];
    let mut rng = Rng(0xdead_beef);
    for _ in 0..3000 {
        let payload = damaged(&mut rng, &seeds);
        let out = p
            .call_raw("validate_settings", &payload, Session::none())
            .unwrap_or_else(|e| {
                panic!(
                    "trap: {e:#} for input {:?}",
                    String::from_utf8_lossy(&payload)
                )
            });
        assert_well_formed(&out, "valid", &payload);
    }
}
