// Package jsonpath implements KubeMod's JSONPath dialect: a lexer, a parser
// producing an immutable AST, a canonical printer and an evaluator over the
// plain JSON trees of package value.
//
// # What it owns
//
// The dialect itself: its grammar, its canonical form, and the rules for
// what an expression yields on a document, including when a value is
// undefined. It knows nothing of Kubernetes, ModRules, admission requests or
// patches; callers give it an expression and a tree and get back values, or
// nodes with the keys that led to them (Select), from which they may build
// paths of their own.
//
// # Grammar
//
//	expr     = or
//	or       = and { "||" and }
//	and      = eq { "&&" eq }
//	eq       = rel { ("==" | "!=" | "=~" | "!~") rel }   right of =~ / !~: a string literal (RE2, unanchored)
//	rel      = add { ("<" | "<=" | ">" | ">=") add }
//	add      = mul { ("+" | "-") mul }
//	mul      = unary { ("*" | "/" | "%") unary }
//	unary    = ("!" | "-") unary | primary
//	primary  = string | number | "true" | "false" | "null"
//	         | path | "(" expr ")" | func "(" expr ")"
//	func     = "length" | "isDefined" | "isUndefined" | "isEmpty" | "isNotEmpty"
//	path     = ("$" | "@") { step }
//	step     = "." name | ".*" | ".." (name | "*" | bracket) | bracket
//	bracket  = "[" ( "*" | int | string | union | slice | "?" expr ) "]"
//	union    = (string | int) "," (string | int) { "," (string | int) }
//	slice    = [int] ":" [int] [ ":" [int] ]          step 0 is an error
//
// A name after "." or ".." is made of letters, digits and '_' and follows
// the dot immediately; other names are written ["..."]. Strings take double
// or single quotes and the escapes \\ \" \' \/ \b \f \n \r \t \uXXXX.
// Numbers are JSON numbers and are kept as json.Number, as written. Operators
// are left-associative. Whitespace may separate tokens. Sources are limited
// to MaxSourceLen bytes and MaxDepth levels of nesting.
//
// $ is the document root; @ is the current element inside a filter, and the
// root at top level. [*] and .* yield array elements or object values (in
// sorted key order); filters test the same children; ".." visits a node and
// all its descendants, pre-order, and applies the next step to each.
// Results come in document order, except unions and negative-step slices,
// which yield in the order written or stepped.
//
// # Undefined
//
// A path through a missing member, an out-of-range index, a name on a
// non-object or an index on a non-array is undefined, and undefined values
// are dropped from results. As an operand, a definite query (only .name,
// ["name"] and [n] steps) is its value or undefined; any other query is an
// array of the values it selects. Every comparison with undefined is false,
// != included; arithmetic with undefined is undefined; &&, || and ! demand
// booleans and fail otherwise (an EvalError), except inside a filter where a
// query operand of theirs, or a query that is the whole filter, is an
// existence test. length, isDefined, isUndefined, isEmpty and isNotEmpty
// accept undefined.
//
// # Evaluation
//
// Evaluation never modifies the document (the values it returns alias it),
// never panics, honours its context (checked every 1,024 nodes visited), and
// compiles nothing: regular expressions are compiled by Parse. Its memory is
// bounded whatever the query and the document: a query selects at most
// MaxValues values and Select's nodes hold at most MaxKeys captured keys
// (beyond, an error wrapping ErrTooManyValues); so are its time and stack,
// deadline or not: it visits at most MaxVisits nodes, and the '..' steps
// active at once go at most 10,000 levels down (beyond, ErrTooMuchWork). An
// Expr is safe for concurrent use.
//
// Expr.PathOf gives a selected node's full path (where a schema types it);
// Expr.Pattern a query's path as its text says it; Expr.Tree a read-only
// view of the expression for translators (internal/translate writes filters
// as CEL). Evaluation uses none of them.
package jsonpath
