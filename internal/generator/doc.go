// Package generator is the operator's side of the rules that generate
// objects (Kyverno's generate rules): the objects an admission decision
// asks to exist (engine.Decision.Generated) are created once the review is
// allowed, kept as their rule says when it synchronizes them, and deleted
// with their trigger.
//
// A Generator is told of every decision of the dragnet (it is a
// webhook.Observer) and hands the work to its own bounded queue, so that
// no review waits for a write: a decision's objects are created or
// applied after their trigger is stored (a trigger the API server did not
// store, because a later admission step refused it, generates nothing);
// a DELETE's objects (the synchronized ones going with their trigger) are
// deleted when their labels name that trigger; an existing object a rule
// changed (Generated.Patch: Kyverno's mutate of existing objects) is
// patched, the patch testing the resourceVersion the rule read, and made
// again from its trigger when the object changed in between. The objects of the watched
// resources that carry a trigger's labels are watched: when one that its
// rule synchronizes is deleted or changed, the trigger is evaluated again
// and the object applied as the rule now makes it. Writes are server-side
// applies (synchronized objects, forced, by one field manager) or creates
// (the others, once), so replicas doing the same work agree. Each task is
// retried with backoff a bounded number of times; a full queue drops new
// tasks, counted and logged.
//
// Existing, on the elected leader, carries out what the rules acting on
// existing objects (Kyverno's generateExisting and
// mutateExistingOnPolicyUpdate: engine.RuleInfo.Existing) make of the
// objects already in the cluster when such a rule comes or changes: it
// lists the objects of the kinds the rule can match, page by page,
// evaluates each against that rule as if created, and hands what it
// generates or changes to the Generator's queue. Downstream, on the
// leader too, deletes the synchronized objects of a deleted rule
// (engine.RuleInfo.Downstream: unless Kyverno's
// orphanDownstreamOnPolicyDelete) once the API server confirms the rule's
// object is gone.
//
// Each queued task is recorded (records.go: a GenerateRequest in the
// operator's namespace, written by a queue of its own and deleted when
// the task is done or given up); Recover, on the leader, takes up the
// records older than a few minutes, the work of a replica that stopped,
// by evaluating their triggers again.
//
// It must not know rule kinds, languages or the command line (internal/cli
// wires it).
package generator
