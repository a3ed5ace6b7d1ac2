-- A fresh sign-in means a password (docs/trust-log.md, "Fresh sign-in"). Starting a log and
-- asking for a reset need one, because they replace who the user is: the rule read any entry of
-- the JWT's `amr` less than 600 s old, and Supabase Auth writes one for every way in, among them
-- `otp`, `magiclink`, `recovery`, `invite`, `email_change` and `email/signup`. Each of those
-- proves only access to the mailbox. Now only a password counts, or a second factor (`totp`,
-- `mfa/phone`, `mfa/webauthn`), which only a user who enrolled one can give.
--
-- What this does not stop: whoever holds the mailbox can follow a recovery link, set a new
-- password (Supabase Auth allows it from the recovery session), then sign in with it. The rule
-- makes that a visible act (the user's password changes under them) rather than a silent one; a
-- reset it allows is still pending 72 hours, and any root's sync vetoes it. An account that signs
-- in only by OAuth, SSO or web3 has no password: it cannot start a log or ask for a reset.
--
-- Both schema variants get this file.
CREATE OR REPLACE FUNCTION private.tl_fresh_sign_in() RETURNS boolean
    LANGUAGE sql STABLE SET search_path = '' AS $$
    SELECT CASE WHEN jsonb_typeof(auth.jwt() -> 'amr') = 'array' THEN EXISTS (
        SELECT 1 FROM jsonb_array_elements(auth.jwt() -> 'amr') a
        WHERE jsonb_typeof(a) = 'object' AND jsonb_typeof(a -> 'timestamp') = 'number'
          AND a ->> 'method' IN ('password', 'totp', 'mfa/phone', 'mfa/webauthn')
          AND (a ->> 'timestamp')::numeric >= extract(epoch FROM now()) - 600)
    ELSE false END
$$;
