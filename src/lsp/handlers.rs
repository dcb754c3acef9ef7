//! The answers: the server's capabilities, diagnostics in the protocol's terms, and one
//! handler per request, each a thin translation over `lang::ide`.

use std::collections::BTreeMap;

use lang::diag::Diagnostic;
use lang::ide::{self, Analysis, CompletionKind, Highlight, SymbolKind};
use lang::span::{FileId, Span};
use lsp_server::{Request, Response};
use lsp_types as lsp;
use lsp_types::request::Request as _;
use lsp_types::{Location, TextDocumentPositionParams, Uri};
use serde_json::Value;

use super::convert::{self, Lines};
use super::{Doc, Server};

/// The highlighting kinds, in the order of the legend the server announces.
const HIGHLIGHTS: [(Highlight, lsp::SemanticTokenType); 11] = [
    (Highlight::Keyword, lsp::SemanticTokenType::KEYWORD),
    (Highlight::Type, lsp::SemanticTokenType::TYPE),
    (Highlight::Variable, lsp::SemanticTokenType::VARIABLE),
    (Highlight::Function, lsp::SemanticTokenType::FUNCTION),
    (Highlight::Namespace, lsp::SemanticTokenType::NAMESPACE),
    (Highlight::Property, lsp::SemanticTokenType::PROPERTY),
    (Highlight::String, lsp::SemanticTokenType::STRING),
    (Highlight::Regexp, lsp::SemanticTokenType::REGEXP),
    (Highlight::Number, lsp::SemanticTokenType::NUMBER),
    (Highlight::Comment, lsp::SemanticTokenType::COMMENT),
    (Highlight::Operator, lsp::SemanticTokenType::OPERATOR),
];

pub fn capabilities() -> lsp::ServerCapabilities {
    lsp::ServerCapabilities {
        text_document_sync: Some(lsp::TextDocumentSyncCapability::Options(lsp::TextDocumentSyncOptions {
            open_close: Some(true),
            change: Some(lsp::TextDocumentSyncKind::INCREMENTAL),
            save: Some(lsp::TextDocumentSyncSaveOptions::Supported(true)),
            ..Default::default()
        })),
        hover_provider: Some(lsp::HoverProviderCapability::Simple(true)),
        definition_provider: Some(lsp::OneOf::Left(true)),
        references_provider: Some(lsp::OneOf::Left(true)),
        completion_provider: Some(lsp::CompletionOptions {
            trigger_characters: Some(vec!["$".into(), ".".into(), ">".into()]),
            ..Default::default()
        }),
        document_symbol_provider: Some(lsp::OneOf::Left(true)),
        document_formatting_provider: Some(lsp::OneOf::Left(true)),
        semantic_tokens_provider: Some(lsp::SemanticTokensServerCapabilities::SemanticTokensOptions(
            lsp::SemanticTokensOptions {
                legend: lsp::SemanticTokensLegend {
                    token_types: HIGHLIGHTS.iter().map(|(_, t)| t.clone()).collect(),
                    token_modifiers: Vec::new(),
                },
                full: Some(lsp::SemanticTokensFullOptions::Bool(true)),
                range: None,
                ..Default::default()
            },
        )),
        ..Default::default()
    }
}

/// One request's response.
pub fn request(server: &Server, req: &Request) -> Response {
    use lsp::request::{
        Completion, DocumentSymbolRequest, Formatting, GotoDefinition, HoverRequest, References,
        SemanticTokensFullRequest,
    };
    let params = req.params.clone();
    let result = match req.method.as_str() {
        HoverRequest::METHOD => {
            parse(params).map(|p: lsp::HoverParams| hover(server, &p.text_document_position_params))
        }
        GotoDefinition::METHOD => {
            parse(params).map(|p: lsp::GotoDefinitionParams| definition(server, &p.text_document_position_params))
        }
        References::METHOD => parse(params).map(|p: lsp::ReferenceParams| references(server, &p)),
        Completion::METHOD => {
            parse(params).map(|p: lsp::CompletionParams| completion(server, &p.text_document_position))
        }
        DocumentSymbolRequest::METHOD => {
            parse(params).map(|p: lsp::DocumentSymbolParams| symbols(server, &p.text_document.uri))
        }
        Formatting::METHOD => {
            parse(params).map(|p: lsp::DocumentFormattingParams| formatting(server, &p.text_document.uri))
        }
        SemanticTokensFullRequest::METHOD => {
            parse(params).map(|p: lsp::SemanticTokensParams| tokens(server, &p.text_document.uri))
        }
        _ => {
            return Response::new_err(
                req.id.clone(),
                lsp_server::ErrorCode::MethodNotFound as i32,
                format!("tend lsp does not answer {}", req.method),
            );
        }
    };
    match result {
        Ok(value) => Response::new_ok(req.id.clone(), value),
        Err(e) => Response::new_err(req.id.clone(), lsp_server::ErrorCode::InvalidParams as i32, e),
    }
}

fn parse<P: serde::de::DeserializeOwned>(params: Value) -> Result<P, String> {
    serde_json::from_value(params).map_err(|e| format!("invalid params: {e}"))
}

/// The open document, its analysis and the offset of a position in it.
fn at<'s>(server: &'s Server, pos: &TextDocumentPositionParams) -> Option<(&'s Doc, &'s Analysis, u32)> {
    let doc = server.docs.get(pos.text_document.uri.as_str())?;
    let analysis = doc.analysis.as_deref()?;
    Some((doc, analysis, Lines::new(&doc.text).offset(pos.position)))
}

/// Spans of one analysis as protocol locations, with each file's line index built once.
struct Places<'a> {
    /// The document's URI, which its entry file (`FileId(0)`) is shown as.
    uri: &'a Uri,
    analysis: &'a Analysis,
    lines: BTreeMap<FileId, Lines<'a>>,
}

impl<'a> Places<'a> {
    fn new(uri: &'a Uri, analysis: &'a Analysis) -> Places<'a> {
        Places { uri, analysis, lines: BTreeMap::new() }
    }

    fn range(&mut self, span: Span) -> lsp::Range {
        let analysis = self.analysis;
        let lines = self.lines.entry(span.file).or_insert_with(|| Lines::new(&analysis.sources.get(span.file).text));
        lines.range(span.start, span.end)
    }

    /// Where a span is: the document itself for its entry file, else the file on disk.
    fn location(&mut self, span: Span) -> Option<Location> {
        let uri = match span.file {
            FileId(0) => self.uri.clone(),
            file => convert::uri_of(self.analysis.sources.get(file).real_path.as_deref()?)?,
        };
        Some(Location { uri, range: self.range(span) })
    }
}

fn hover(server: &Server, pos: &TextDocumentPositionParams) -> Value {
    let Some((doc, analysis, offset)) = at(server, pos) else { return Value::Null };
    let Some(info) = ide::hover(analysis, &server.catalog, FileId(0), offset) else { return Value::Null };
    let hover = lsp::Hover {
        contents: lsp::HoverContents::Markup(lsp::MarkupContent {
            kind: lsp::MarkupKind::Markdown,
            value: info.markdown,
        }),
        range: Some(Lines::new(&doc.text).range(info.span.start, info.span.end)),
    };
    serde_json::to_value(hover).unwrap_or(Value::Null)
}

fn definition(server: &Server, pos: &TextDocumentPositionParams) -> Value {
    let Some((_, analysis, offset)) = at(server, pos) else { return Value::Null };
    let found = ide::definition(analysis, FileId(0), offset)
        .and_then(|s| Places::new(&pos.text_document.uri, analysis).location(s));
    found.and_then(|l| serde_json::to_value(lsp::GotoDefinitionResponse::Scalar(l)).ok()).unwrap_or(Value::Null)
}

fn references(server: &Server, p: &lsp::ReferenceParams) -> Value {
    let pos = &p.text_document_position;
    let Some((_, analysis, offset)) = at(server, pos) else { return Value::Null };
    let spans = ide::references(analysis, FileId(0), offset, p.context.include_declaration);
    let mut places = Places::new(&pos.text_document.uri, analysis);
    let found: Vec<Location> = spans.into_iter().filter_map(|s| places.location(s)).collect();
    serde_json::to_value(found).unwrap_or(Value::Null)
}

fn completion(server: &Server, pos: &TextDocumentPositionParams) -> Value {
    let Some(doc) = server.docs.get(pos.text_document.uri.as_str()) else { return Value::Null };
    let offset = Lines::new(&doc.text).offset(pos.position);
    let analysis = doc.typed.as_deref().or(doc.analysis.as_deref());
    let items: Vec<lsp::CompletionItem> = ide::complete(&doc.text, offset, FileId(0), &server.catalog, analysis)
        .into_iter()
        .map(|c| lsp::CompletionItem {
            kind: Some(match c.kind {
                CompletionKind::Kind => lsp::CompletionItemKind::CLASS,
                CompletionKind::Param | CompletionKind::Field => lsp::CompletionItemKind::FIELD,
                CompletionKind::Meta => lsp::CompletionItemKind::PROPERTY,
                CompletionKind::Value => lsp::CompletionItemKind::VALUE,
                CompletionKind::Function => lsp::CompletionItemKind::FUNCTION,
                CompletionKind::Variable => lsp::CompletionItemKind::VARIABLE,
                CompletionKind::Keyword => lsp::CompletionItemKind::KEYWORD,
            }),
            detail: (!c.detail.is_empty()).then_some(c.detail),
            insert_text: (c.insert != c.label).then_some(c.insert),
            label: c.label,
            ..Default::default()
        })
        .collect();
    serde_json::to_value(lsp::CompletionResponse::Array(items)).unwrap_or(Value::Null)
}

fn symbols(server: &Server, uri: &Uri) -> Value {
    let Some(doc) = server.docs.get(uri.as_str()) else { return Value::Null };
    let lines = Lines::new(&doc.text);
    let found: Vec<lsp::DocumentSymbol> =
        ide::outline(FileId(0), &doc.text).iter().map(|s| symbol(&lines, s)).collect();
    serde_json::to_value(lsp::DocumentSymbolResponse::Nested(found)).unwrap_or(Value::Null)
}

#[allow(deprecated)] // `DocumentSymbol::deprecated` must still be written.
fn symbol(lines: &Lines<'_>, s: &ide::Symbol) -> lsp::DocumentSymbol {
    let range = lines.range(s.span.start, s.span.end);
    let mut selection_range = lines.range(s.name_span.start, s.name_span.end);
    if selection_range.start < range.start || selection_range.end > range.end {
        selection_range = range;
    }
    lsp::DocumentSymbol {
        name: s.name.clone(),
        detail: Some(s.detail.clone()),
        kind: match s.kind {
            SymbolKind::Class => lsp::SymbolKind::CLASS,
            SymbolKind::Func => lsp::SymbolKind::FUNCTION,
            SymbolKind::Type => lsp::SymbolKind::STRUCT,
            SymbolKind::Node => lsp::SymbolKind::NAMESPACE,
            SymbolKind::Resource => lsp::SymbolKind::OBJECT,
            SymbolKind::Variable => lsp::SymbolKind::VARIABLE,
        },
        tags: None,
        deprecated: None,
        range,
        selection_range,
        children: (!s.children.is_empty()).then(|| s.children.iter().map(|c| symbol(lines, c)).collect()),
    }
}

/// The whole document in mgmt's canonical layout, as one edit; no edit when it is
/// formatted already or does not parse (its errors are in the diagnostics).
fn formatting(server: &Server, uri: &Uri) -> Value {
    let Some(doc) = server.docs.get(uri.as_str()) else { return Value::Null };
    let edits = match lang::format::format(FileId(0), &doc.text) {
        Ok(formatted) if formatted != doc.text => {
            let lines = Lines::new(&doc.text);
            vec![lsp::TextEdit { range: lines.range(0, doc.text.len() as u32), new_text: formatted }]
        }
        _ => Vec::new(),
    };
    serde_json::to_value(edits).unwrap_or(Value::Null)
}

fn tokens(server: &Server, uri: &Uri) -> Value {
    let Some(doc) = server.docs.get(uri.as_str()) else { return Value::Null };
    let lines = Lines::new(&doc.text);
    let mut data = Vec::new();
    let mut last = lsp::Position::default();
    for (span, kind) in ide::highlight(FileId(0), &doc.text) {
        let Some(index) = HIGHLIGHTS.iter().position(|(h, _)| *h == kind) else { continue };
        // A token may not span lines: a multi-line string is one token per line.
        let mut start = span.start as usize;
        for piece in doc.text[span.range()].split_inclusive('\n') {
            let text = piece.trim_end_matches('\n');
            let pos = lines.position(start as u32);
            let length = text.encode_utf16().count() as u32;
            if length > 0 {
                let delta_line = pos.line - last.line;
                let delta_start = if delta_line == 0 { pos.character - last.character } else { pos.character };
                data.push(lsp::SemanticToken {
                    delta_line,
                    delta_start,
                    length,
                    token_type: index as u32,
                    token_modifiers_bitset: 0,
                });
                last = pos;
            }
            start += piece.len();
        }
    }
    serde_json::to_value(lsp::SemanticTokensResult::Tokens(lsp::SemanticTokens { result_id: None, data }))
        .unwrap_or(Value::Null)
}

/// The diagnostics of a document's analysis, by the URI of the file each is in: the
/// document's own, and those in files it imports that are not open themselves.
pub fn diagnostics(
    uri: &str,
    analysis: &Analysis,
    docs: &BTreeMap<String, Doc>,
) -> BTreeMap<String, Vec<lsp::Diagnostic>> {
    let mut out: BTreeMap<String, Vec<lsp::Diagnostic>> = BTreeMap::new();
    let Ok(own) = uri.parse::<Uri>() else { return out };
    let mut places = Places::new(&own, analysis);
    out.entry(uri.to_string()).or_default();
    for d in analysis.errors.iter().chain(analysis.warnings.iter()) {
        let span = d.span.unwrap_or_default();
        let target = if span.file == FileId(0) {
            uri.to_string()
        } else {
            let Some(real) = analysis.sources.get(span.file).real_path.clone() else { continue };
            // An open file (the document itself included) publishes its own.
            if docs.values().any(|o| o.path == real) {
                continue;
            }
            let Some(target) = convert::uri_of(&real) else { continue };
            target.to_string()
        };
        let converted = convert_diagnostic(&mut places, d);
        out.entry(target).or_default().push(converted);
    }
    out
}

fn convert_diagnostic(places: &mut Places<'_>, d: &Diagnostic) -> lsp::Diagnostic {
    let mut message = d.message.clone();
    for note in &d.notes {
        message.push_str("\nnote: ");
        message.push_str(note);
    }
    let related: Vec<lsp::DiagnosticRelatedInformation> = d
        .labels
        .iter()
        .filter_map(|l| {
            Some(lsp::DiagnosticRelatedInformation { location: places.location(l.span)?, message: l.message.clone() })
        })
        .collect();
    let unused = matches!(
        d.code,
        Some(lang::diag::Code::UnusedBind | lang::diag::Code::UnusedImport | lang::diag::Code::UnusedParam)
    );
    lsp::Diagnostic {
        range: places.range(d.span.unwrap_or_default()),
        severity: Some(if d.warning { lsp::DiagnosticSeverity::WARNING } else { lsp::DiagnosticSeverity::ERROR }),
        code: Some(lsp::NumberOrString::String(match d.code {
            Some(code) => code.as_str().to_string(),
            None => d.stage.code().to_string(),
        })),
        code_description: None,
        source: Some("tend".into()),
        message,
        related_information: (!related.is_empty()).then_some(related),
        tags: unused.then(|| vec![lsp::DiagnosticTag::UNNECESSARY]),
        data: None,
    }
}
