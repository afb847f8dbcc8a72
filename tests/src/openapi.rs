//! Every answer the suites get from the API, held to the OpenAPI document
//! the server publishes: the status must be one the operation lists, and a
//! JSON body must match the schema the document gives for that status. The
//! server checks request bodies against the same document; this checks the
//! other direction, so a handler that answers what its annotation does not
//! claim fails the suite that saw it.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use serde_json::{Value, json};

/// One documented operation's answers: a validator per status (`None`
/// where the status carries no JSON schema).
struct Operation {
    template: Vec<String>,
    method: String,
    answers: HashMap<String, Option<jsonschema::Validator>>,
}

/// The document of one server, compiled.
pub struct Document {
    operations: Vec<Operation>,
}

/// Documents already fetched, by the server's origin.
static FETCHED: LazyLock<Mutex<HashMap<String, Arc<Document>>>> = LazyLock::new(Default::default);

impl Document {
    /// The document `origin` (`http://127.0.0.1:<port>`) serves, fetched
    /// once per server.
    pub async fn of(origin: &str) -> Arc<Document> {
        if let Some(doc) = FETCHED.lock().unwrap().get(origin) {
            return doc.clone();
        }
        let url = format!("{origin}/api/v1/openapi.json");
        let doc: Value = reqwest::get(&url).await.unwrap().json().await.unwrap();
        assert!(doc["paths"].as_object().is_some_and(|p| !p.is_empty()), "{url} lists no operations: {doc}");
        let doc = Arc::new(Document::compile(&doc));
        FETCHED.lock().unwrap().insert(origin.to_string(), doc.clone());
        doc
    }

    fn compile(doc: &Value) -> Document {
        let components = doc.get("components").cloned().unwrap_or_else(|| json!({}));
        let mut operations = Vec::new();
        for (path, item) in doc["paths"].as_object().into_iter().flatten() {
            for (method, operation) in item.as_object().into_iter().flatten() {
                let mut answers = HashMap::new();
                for (status, response) in operation["responses"].as_object().into_iter().flatten() {
                    let validator = response.pointer("/content/application~1json/schema").map(|schema| {
                        let root = json!({ "allOf": [schema], "components": components });
                        jsonschema::validator_for(&root)
                            .unwrap_or_else(|e| panic!("{method} {path} {status}: the schema does not compile: {e}"))
                    });
                    answers.insert(status.clone(), validator);
                }
                let template = path.split('/').map(str::to_string).collect();
                operations.push(Operation { template, method: method.to_ascii_uppercase(), answers });
            }
        }
        Document { operations }
    }

    /// The operation `method path` is, preferring literal segments over
    /// parameters (`/capabilities/search` over `/capabilities/{id}`).
    fn operation(&self, method: &str, path: &str) -> Option<&Operation> {
        let segments: Vec<&str> = path.split('/').collect();
        self.operations
            .iter()
            .filter(|op| op.method == method && op.template.len() == segments.len())
            .filter(|op| op.template.iter().zip(&segments).all(|(t, s)| t == s || t.starts_with('{')))
            .max_by_key(|op| op.template.iter().filter(|t| !t.starts_with('{')).count())
    }

    /// Why `status` and `body` are not what the document says `method path`
    /// answers; `None` when they are, or when the document has no such
    /// operation (an unknown route is the router's to answer).
    pub fn mismatch(&self, method: &str, path: &str, status: u16, body: &Value) -> Option<String> {
        let operation = self.operation(method, path)?;
        let route = operation.template.join("/");
        let status = status.to_string();
        let Some(answer) = operation.answers.get(&status).or_else(|| operation.answers.get("default")) else {
            let listed: Vec<&String> = operation.answers.keys().collect();
            return Some(format!("{method} {route} answered {status}, which the document does not list ({listed:?})"));
        };
        let validator = answer.as_ref()?;
        let errors: Vec<String> =
            validator.iter_errors(body).take(3).map(|e| format!("{e} at {}", e.instance_path())).collect();
        (!errors.is_empty()).then(|| {
            format!("{method} {route} answered {status} with a body its schema refuses: {}", errors.join("; "))
        })
    }
}
