-- A fresh sign-in means a password (docs/trust-log.md, "Fresh sign-in"). Starting a log and
-- asking for a reset need one, because they replace who the user is: the rule read any entry of
-- the JWT's `amr` less than 600 s old, and Supabase Auth writes one for every way in, among them
-- `otp`, `magiclink`, `recovery`, `invite`, `email_change` and `email/signup`. Each of those
-- proves only access to the mailbox, which a thief of the account's email has without its
-- password. Now only a password counts, or a second factor (`totp`, `mfa/phone`,
-- `mfa/webauthn`), which only a user who enrolled one can give.
--
-- Both schema variants get this file.
CREATE OR REPLACE FUNCTION private.tl_fresh_sign_in() RETURNS boolean
    LANGUAGE sql STABLE SET search_path = '' AS $$
    SELECT CASE WHEN jsonb_typeof(auth.jwt() -> 'amr') = 'array' THEN EXISTS (
        SELECT 1 FROM jsonb_array_elements(auth.jwt() -> 'amr') a
        WHERE jsonb_typeof(a) = 'object' AND jsonb_typeof(a -> 'timestamp') = 'number'
          AND a ->> 'method' IN ('password', 'totp', 'mfa/totp', 'mfa/phone', 'mfa/webauthn')
          AND (a ->> 'timestamp')::numeric >= extract(epoch FROM now()) - 600)
    ELSE false END
$$;
