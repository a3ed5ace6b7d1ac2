/// A server rule's refusal, in the words the SQL raises it with: every rule's `Refusal` says
/// what PostgreSQL would, so that a remote raising it reads the same to the PostgREST client.
public protocol RuleRefusal: Sendable {
    /// What the refusal says.
    var message: String { get }
    /// The SQLSTATE it is raised with.
    var sqlState: String { get }
    /// The hint it carries; `nil`: none.
    var hint: String? { get }
}

extension RuleRefusal {
    /// No hint.
    public var hint: String? { nil }
}

extension CallerRules.Refusal: RuleRefusal {}
extension CredentialRules.Refusal: RuleRefusal {}
extension AnswerRules.Refusal: RuleRefusal {}
extension AnswerRules.ApprovalRefusal: RuleRefusal {}

extension PushTokenRules.Refusal: RuleRefusal {
    /// 22023 (invalid parameter value), for every field.
    public var sqlState: String { "22023" }
}
