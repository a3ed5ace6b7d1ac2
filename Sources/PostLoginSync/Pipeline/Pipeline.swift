/// Batches through three stages at once, each at most one batch ahead of the next: while batch
/// n is written, n+1 is transformed (in a child task, which may use every core) and n+2 is
/// read (in the calling task). Push and pull run their work through it: memory holds three
/// batches at most, however long the work.
///
/// Between the transform and the write, `check` runs in the calling task, batch by batch in
/// order: where a caller counts, reports and decides what is written. `written` too runs in the
/// calling task, with each write's result, in order.
///
/// Structured: every stage is a child of the caller's task group. An error in any stage, or
/// the caller's cancellation, ends them all, and the first error is thrown.
struct Pipeline<Batch: Sendable, Transformed: Sendable, Checked: Sendable, Written: Sendable> {
    /// Where the transform runs.
    enum Placement: Sendable {
        /// In a child task, beside the reading of the next batch: for work that takes as long as
        /// a read (opening, sealing). A batch is checked and its write starts when the next
        /// batch is read, or at the end.
        case beside
        /// In the calling task, right after the batch is read, and the batch is checked and its
        /// write started at once: for a transform much cheaper than a read or a write, so the
        /// write overlaps the next read instead of waiting for it.
        case inline
    }

    /// Turns a batch read into one to check (opening or sealing, typically in parallel).
    let transform: @Sendable (Batch) async throws -> Transformed
    /// Writes a checked batch; at most one at a time, in order.
    let write: @Sendable (Checked) async throws -> Written
    var placement = Placement.beside

    /// Runs `reading`, which hands each batch it reads to its `emit`, and every batch emitted
    /// through the stages; returns once the last write ended.
    func run(
        reading: (_ emit: @escaping (Batch) async throws -> Void) async throws -> Void,
        check: (Transformed) async throws -> Checked,
        written: (Written) async throws -> Void = { _ in }
    ) async throws {
        // The stages' closures only run during this call; the compiler cannot see that through
        // the task group, hence `withoutActuallyEscaping` (which checks it at run time).
        try await withoutActuallyEscaping(check) { check in
            try await withoutActuallyEscaping(written) { written in
                try await withThrowingTaskGroup(of: Step.self) { group in
                    var flow = Flow()
                    func emit(_ batch: Batch) async throws {
                        try await settle(&flow, in: &group, check: check, written: written)
                        flow.transforming = true
                        guard placement == .beside else {
                            flow.ready = try await transform(batch)
                            return try await settle(&flow, in: &group, check: check, written: written)
                        }
                        let transform = self.transform
                        group.addTask { .transformed(try await transform(batch)) }
                    }
                    try await withoutActuallyEscaping(emit) { emit in try await reading(emit) }
                    try await settle(&flow, in: &group, check: check, written: written)
                    while flow.writing { try await receive(&flow, from: &group, written: written) }
                }
            }
        }
    }

    private enum Step: Sendable {
        case transformed(Transformed)
        case written(Written)
    }

    /// Which stages hold a batch.
    private struct Flow {
        var transforming = false
        var writing = false
        /// A batch transformed, not yet checked.
        var ready: Transformed?
    }

    /// Waits for the batch being transformed (if any), checks it, and starts writing it once
    /// the write before it ended.
    private func settle(
        _ flow: inout Flow, in group: inout ThrowingTaskGroup<Step, Error>,
        check: (Transformed) async throws -> Checked, written: (Written) async throws -> Void
    ) async throws {
        guard flow.transforming else { return }
        while flow.ready == nil && flow.transforming { try await receive(&flow, from: &group, written: written) }
        guard let transformed = flow.ready else { return }
        flow.ready = nil
        flow.transforming = false
        let checked = try await check(transformed)
        while flow.writing { try await receive(&flow, from: &group, written: written) }
        let write = self.write
        group.addTask { .written(try await write(checked)) }
        flow.writing = true
    }

    /// Takes the next stage's result.
    private func receive(
        _ flow: inout Flow, from group: inout ThrowingTaskGroup<Step, Error>, written: (Written) async throws -> Void
    ) async throws {
        guard let step = try await group.next() else {
            // Nothing in flight: the flags are wrong, which cannot happen; never wait forever.
            flow.transforming = false
            flow.writing = false
            return
        }
        switch step {
        case .transformed(let batch):
            flow.ready = batch
        case .written(let result):
            flow.writing = false
            try await written(result)
        }
    }
}
