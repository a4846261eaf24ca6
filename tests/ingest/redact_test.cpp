// Redaction rules 1-6 (docs/redaction.md): whitespace, private keys, token shapes, authorization
// headers, credentials, secret assignments; one test per rule. Rules 7-9, hashing, idempotence and
// the real corpus: redact_users_test.cpp.
#include "peakcast/ingest/redact.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "peakcast/core/hash.h"

namespace peakcast::ingest {
namespace {

// ---- whitespace

TEST(Redact, NormalizesLineEndingsAndTrailingWhitespace) {
  EXPECT_EQ(redact_script("a  \r\nb\t\r\n\r\n\n"), "a\nb");
  EXPECT_EQ(redact_script("a\rb"), "a\nb");
  EXPECT_EQ(redact_script("\xEF\xBB\xBFpython x.py\n"), "python x.py");
  EXPECT_EQ(redact_script("  indented\n\n\nkept blank lines"), "  indented\n\n\nkept blank lines");
}

// ---- private keys

TEST(Redact, PrivateKeyBlocks) {
  std::string s =
      "echo start\ncat > id <<EOF\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"
      "QUJDREVGRw==\n-----END OPENSSH PRIVATE KEY-----\nEOF\necho done";
  RedactionCounts c;
  std::string r = redact_script(s, &c);
  EXPECT_EQ(r, "echo start\ncat > id <<EOF\n<PRIVATE KEY>\nEOF\necho done");
  EXPECT_EQ(c.private_keys, 1);
  // Cut off before END: everything to the end goes.
  EXPECT_EQ(redact_script("x\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nabc"), "x\n<PRIVATE KEY>");
  // Public keys and certificates are not secrets.
  std::string pub = "-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----";
  EXPECT_EQ(redact_script(pub), pub);
}

// The SSH2 (RFC 4716, `---- BEGIN SSH2 … PRIVATE KEY ----`) and PuTTY (`PuTTY-User-Key-File-N:`
// … `Private-MAC:`) private-key formats have no `-----BEGIN`.
TEST(Redact, Ssh2AndPuttyPrivateKeys) {
  RedactionCounts c;
  EXPECT_EQ(redact_script("x\n---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: \"k\"\nP2/56wAAAi4AAAA3\n"
                          "---- END SSH2 ENCRYPTED PRIVATE KEY ----\ny",
                          &c),
            "x\n<PRIVATE KEY>\ny");
  EXPECT_EQ(redact_script("cat > k.ppk <<EOF\nPuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: k\n"
                          "Public-Lines: 2\nAAAAC3Nz\nAAAAIB\nPrivate-Lines: 1\nAAAAIQDs\nPrivate-MAC: 0123abcd\nEOF",
                          &c),
            "cat > k.ppk <<EOF\n<PRIVATE KEY>\nEOF");
  EXPECT_EQ(c.private_keys, 2);
  // PuTTY's version 1 ends at Private-Hash; a block cut off goes to the end, as PEM's does.
  EXPECT_EQ(redact_script("PuTTY-User-Key-File-1: ssh-rsa\nPrivate-Lines: 1\nAAAA\nPrivate-Hash: 01ab\nz"),
            "<PRIVATE KEY>\nz");
  EXPECT_EQ(redact_script("a\nPuTTY-User-Key-File-2: ssh-rsa\nPrivate-Lines: 1\nAAAA"), "a\n<PRIVATE KEY>");
  EXPECT_EQ(redact_script("a\n---- BEGIN SSH2 PRIVATE KEY ----\nAAAA"), "a\n<PRIVATE KEY>");
  // Public keys stay, and so does prose.
  for (std::string s : {"---- BEGIN SSH2 PUBLIC KEY ----\nAAAAB3\n---- END SSH2 PUBLIC KEY ----",
                        "# convert with puttygen k.ppk (PuTTY-User-Key-File format)", "---- BEGIN ----"}) {
    EXPECT_EQ(redact_script(s), s);
  }
}

// ---- token shapes

TEST(Redact, TokenShapes) {
  const std::vector<std::string> tokens = {
      "ghp_" + std::string(36, 'a') + "1",
      "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
      "glpat-abcdefghij0123456789",
      "xoxb-123456789012-abcdefghijkl",
      "AKIAIOSFODNN7EXAMPLE",
      "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
      "sk-proj-abc123def456ghi789jkl012",
      "AIzaSyA1234567890abcdefghijklmnopqrstuv",
      "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abcdefghijk_lmnop",
      "https://hooks.slack.com/services/T000/B000/XXXXXXXX",
  };
  for (const auto& t : tokens) {
    RedactionCounts c;
    std::string r = redact_script("run --quiet " + t + " && echo ok", &c);
    EXPECT_EQ(r, "run --quiet <TOKEN> && echo ok") << t;
    EXPECT_EQ(c.tokens, 1) << t;
  }
  // Look-alikes that are not tokens stay.
  for (std::string s : {"module load task-sk-learn", "cd /data/AKIA", "python hf_train.py",
                        "--tokenizer-type GPT2BPETokenizer"}) {
    EXPECT_EQ(redact_script(s), s);
  }
}

// NVIDIA (`nvapi-`), PyPI (`pypi-AgE…`), Stripe (`sk_live_`/`rk_live_`/`_test_`), Slack app-level
// (`xapp-`), SendGrid (`SG.x.y`) and Google OAuth access tokens (`ya29.`) kept their shape.
TEST(Redact, MoreTokenShapes) {
  const std::vector<std::string> tokens = {
      "nvapi-" + std::string(60, 'a') + "_Z-9",
      "pypi-AgEIcHlwaS5vcmcCJGFiY2RlZmdoLWlqa2wtbW5vcC1xcnN0LXV2d3h5ejAxMjM0",
      "sk_live_51Habcdefghijklmnopqrstuvwxyz0123",
      "rk_live_51Habcdefghijklmnopqrstuvwxyz0123",
      "sk_test_51Habcdefghijklmnopqrstuvwxyz0123",
      "xapp-1-A0123456789-1234567890123-abcdef0123456789",
      "SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG",
      "ya29.a0AfH6SMBabcdefghijklmnopqrstuvwxyz_0123",
  };
  for (const auto& t : tokens) {
    RedactionCounts c;
    EXPECT_EQ(redact_script("run --quiet " + t + " && echo ok", &c), "run --quiet <TOKEN> && echo ok") << t;
    EXPECT_EQ(c.tokens, 1) << t;
  }
  for (std::string s : {"pip install pypi-simple pypi-server", "git clone https://github.com/x/nvapi-examples",
                        "module load SG.intel-2023", "ls ya29.txt", "mv mask_live_data x", "cd xapp-1-build"}) {
    EXPECT_EQ(redact_script(s), s);
  }
}

TEST(Redact, BearerAndAuthorizationHeaders) {
  EXPECT_EQ(redact_script("curl -H 'Authorization: Bearer abc.def.ghi123' https://x"),
            "curl -H 'Authorization: Bearer <SECRET>' https://x");
  EXPECT_EQ(redact_script("curl -H \"Authorization: token 0123456789abcdef\" u"),
            "curl -H \"Authorization: token <SECRET>\" u");
  EXPECT_EQ(redact_script("curl -H \"Authorization: Basic dXNlcjpwYXNz\" u"),
            "curl -H \"Authorization: Basic <SECRET>\" u");
  // A reference to a variable holds no secret.
  std::string ref = "curl -H \"Authorization: Bearer $TOKEN\" u";
  EXPECT_EQ(redact_script(ref), ref);
}

// An Authorization header under a scheme other than Bearer/Basic/token (Elasticsearch's ApiKey,
// Okta's SSWS, a bare key as some APIs take it) kept its credential.
TEST(Redact, AuthorizationHeaderUnderAnyScheme) {
  EXPECT_EQ(redact_script("curl -H \"Authorization: ApiKey abcdefghij0123456789\" https://es:9200"),
            "curl -H \"Authorization: ApiKey <SECRET>\" https://es:9200");
  EXPECT_EQ(redact_script("curl -H 'Authorization: SSWS 00abcdefghij0123456789' https://x"),
            "curl -H 'Authorization: SSWS <SECRET>' https://x");
  EXPECT_EQ(redact_script("curl -H \"Authorization: abcdefghij0123456789\" https://x"),
            "curl -H \"Authorization: <SECRET>\" https://x");
  EXPECT_EQ(redact_script("curl -H \"Proxy-Authorization:Negotiate YIIGhgYGKwYBBQUC\" u"),
            "curl -H \"Proxy-Authorization:Negotiate <SECRET>\" u");
  // References stay; the scheme word is never read as the value (a second pass changes nothing).
  for (std::string s : {"curl -H \"Authorization: ApiKey ${ES_KEY}\" u", "curl -H \"Authorization: $TOKEN\" u",
                        "# Authorization: required for the API", "curl -H \"Authorization: Negotiate <SECRET>\" u"}) {
    EXPECT_EQ(redact_script(s), s) << s;
  }
}

// ---- credentials

TEST(Redact, UrlCurlAndSshpassCredentials) {
  EXPECT_EQ(redact_script("git clone https://alice:s3cr3t@github.com/org/repo.git"),
            "git clone https://<USER>:<SECRET>@github.com/org/repo.git");
  EXPECT_EQ(redact_script("curl -u alice:pa55 https://x/y"), "curl -u <USER>:<SECRET> https://x/y");
  EXPECT_EQ(redact_script("sshpass -p 'hunter2' scp a b"), "sshpass -p '<SECRET>' scp a b");
  // python -u is unbuffered output, not a user.
  std::string py = "python -u train.py --cfg a:b";
  EXPECT_EQ(redact_script(py), py);
}

// ---- secret-named assignments and flags

// Each input becomes its expected text with exactly one secret replaced.
struct Redacted {
  std::string in, out;
};
void expect_one_secret_each(const std::vector<Redacted>& cases) {
  for (const auto& c : cases) {
    RedactionCounts n;
    EXPECT_EQ(redact_script(c.in, &n), c.out) << c.in;
    EXPECT_EQ(n.secrets, 1) << c.in;
  }
}
void expect_kept(std::initializer_list<std::string> texts) {
  for (const std::string& s : texts) EXPECT_EQ(redact_script(s), s) << s;
}

TEST(Redact, SecretAssignments) {
  expect_one_secret_each({
      {"export HF_TOKEN=abc123xyz", "export HF_TOKEN=<SECRET>"},
      {"export GITHUB_TOKEN=\"abc 123\"", "export GITHUB_TOKEN=\"<SECRET>\""},
      {"WANDB_API_KEY=0123456789abcdef0123", "WANDB_API_KEY=<SECRET>"},
      {"export AWS_SECRET_ACCESS_KEY='wJalrXUtnFEMI/K7MDENG'", "export AWS_SECRET_ACCESS_KEY='<SECRET>'"},
      {"DB_PASSWORD=hunter2; run", "DB_PASSWORD=<SECRET>; run"},
      {"mysql --password=hunter2 db", "mysql --password=<SECRET> db"},
      {"python dl.py --hf_token=abc --repo x", "python dl.py --hf_token=<SECRET> --repo x"},
      {"python dl.py --api-key abcdef123 --repo x", "python dl.py --api-key <SECRET> --repo x"},
      {"  client_secret: abcdefg", "  client_secret: <SECRET>"},
      {"{\"apiKey\": \"abcdefg\"}", "{\"apiKey\": \"<SECRET>\"}"},
      {"os.environ['OPENAI_API_KEY'] = 'abcdefg'", "os.environ['OPENAI_API_KEY'] = '<SECRET>'"},
      {"login(password = \"abcdefg\")", "login(password = \"<SECRET>\")"},
  });
  // Not secrets: references, placeholders, booleans, counts, names that only look similar.
  expect_kept({"export HF_TOKEN=$(cat ~/.hf_token)", "export HF_TOKEN=${HF_TOKEN:-}", "API_KEY=\"$KEY\"",
               "--hf_token <your token>", "use_auth_token=True", "train_token_in_billion=400",
               "TOKENIZER_PATH=llm-jp-tokenizer/models/ver2.2", "--max-tokens 2048", "--tokenizer-type GPT2",
               "lr_warmup_tokens=$(echo 4 | bc)", "token = os.getenv(\"T\")", "export MONKEY=banana",
               "#SBATCH --mail-type=ALL", "sort_key_file=x"});
}

// Literals that hide behind a reference's `$`: a default in `${NAME:-…}` (and `-`, `:=`, `=`),
// ANSI-C and locale strings (`$'…'`, `$"…"`), and a quoted value not closed on its line (redacted
// to the line's end).
TEST(Redact, DefaultsAnsiCStringsAndUnclosedQuotes) {
  expect_one_secret_each({
      {"export DB_PASSWORD=${DB_PASSWORD:-Sup3rS3cretPw}", "export DB_PASSWORD=${DB_PASSWORD:-<SECRET>}"},
      {"export HF_TOKEN=\"${HF_TOKEN:-abcdef1234567890abcdef}\"", "export HF_TOKEN=\"${HF_TOKEN:-<SECRET>}\""},
      {"x=${API_KEY-abcdef123}; run", "x=${API_KEY-<SECRET>}; run"},
      {": ${GITHUB_TOKEN:=abcdef123}", ": ${GITHUB_TOKEN:=<SECRET>}"},
      {"echo ${DB_PASS=\"hunter2 pw\"}", "echo ${DB_PASS=\"<SECRET>\"}"},
      {"psql --password=${PGPASSWORD:-'hunter 22'}", "psql --password=${PGPASSWORD:-'<SECRET>'}"},
      {"export API_TOKEN=${TOK:-abcdef123}", "export API_TOKEN=${TOK:-<SECRET>}"},  // NAME's value
      {"export API_TOKEN=\"${TOK:-abc def 123}\"", "export API_TOKEN=\"${TOK:-<SECRET>}\""},
      {"export WANDB_API_KEY=${WANDB_API_KEY:-abc def}", "export WANDB_API_KEY=${WANDB_API_KEY:-<SECRET>}"},
      {"PGPASSWORD=$'hunter2\\tx'", "PGPASSWORD=$'<SECRET>'"},
      {"PGPASSWORD=$'it\\'s here' psql", "PGPASSWORD=$'<SECRET>' psql"},
      {"export SMTP_PASS=$\"abc def\"", "export SMTP_PASS=$\"<SECRET>\""},
      {"export API_TOKEN=\"abc\ndef\"", "export API_TOKEN=\"<SECRET>\ndef\""},
      {"token = 'abcdef\nx = 1", "token = '<SECRET>\nx = 1"},
      {"docker login -u bob -p \"Hunter2pw\nreg.io", "docker login -u bob -p \"<SECRET>\nreg.io"},
      {"echo ${HF_TOKEN:-abcdef123\nnext", "echo ${HF_TOKEN:-<SECRET>\nnext"},
  });
  // References and empty defaults stay; so does a default under a name that is not secret.
  expect_kept({"export HF_TOKEN=${HF_TOKEN:-}", "export HF_TOKEN=${HF_TOKEN}", "x=${HF_TOKEN:-$OTHER}",
               "x=${HF_TOKEN:-${OTHER:-}}", "export API_KEY=\"${API_KEY:-$DEFAULT_KEY}\"",
               "out=${OUTPUT_DIR:-/scratch/run}", "n=${NTASKS:-4}", "x=${HF_TOKEN:+--token}",
               "x=${HF_TOKEN:?set HF_TOKEN first}", "x=${#HF_TOKEN}", "PGPASSWORD=$'$X'",
               "export API_TOKEN=\"", "export HF_TOKEN=\"$HF\nx\"", "echo ${HF_TOKEN:-<SECRET>}"});
  // A nested default under a secret name is read at its own `${`.
  EXPECT_EQ(redact_script("x=${HF_TOKEN:-${HF_HUB_TOKEN:-abcdef123}}"), "x=${HF_TOKEN:-${HF_HUB_TOKEN:-<SECRET>}}");
}

// Secrets stored by a command's own syntax: `aws configure set NAME VALUE` and netrc entries
// (a heredoc, or echo/printf into ~/.netrc).
TEST(Redact, AwsConfigureAndNetrcPasswords) {
  expect_one_secret_each({
      {"aws configure set aws_secret_access_key wJalrXUtnFEMI/K7MDENG",
       "aws configure set aws_secret_access_key <SECRET>"},
      {"aws configure set aws_session_token 'IQoJb3JpZ2luX2Vj' --profile dev",
       "aws configure set aws_session_token '<SECRET>' --profile dev"},
      {"aws --profile dev configure set profile.dev.aws_secret_access_key abcdEFGH1234",
       "aws --profile dev configure set profile.dev.aws_secret_access_key <SECRET>"},
      {"aws configure set --profile dev default.aws_secret_access_key abcdEFGH1234",
       "aws configure set --profile dev default.aws_secret_access_key <SECRET>"},
      {"echo \"machine urs.earthdata.nasa.gov login jdoe password Hunter2pw\" >> ~/.netrc",
       "echo \"machine urs.earthdata.nasa.gov login jdoe password <SECRET>\" >> ~/.netrc"},
      {"cat > ~/.netrc <<EOF\nmachine api.example.org\n  login jdoe\n  password Hunter2pw\nEOF",
       "cat > ~/.netrc <<EOF\nmachine api.example.org\n  login jdoe\n  password <SECRET>\nEOF"},
      {"printf 'machine h\\nlogin u\\npassword Hunter2pw\\n' > ~/.netrc",
       "printf 'machine h\\nlogin u\\npassword <SECRET>\\n' > ~/.netrc"},
      {"echo 'default login anonymous password Hunter2pw' > .netrc",
       "echo 'default login anonymous password <SECRET>' > .netrc"},
      {"machine h password 'Hunter 2'", "machine h password '<SECRET>'"},
  });
  expect_kept({"aws configure set region us-east-1", "aws configure set aws_access_key_id $KEY_ID",
               "aws configure set aws_secret_access_key $AWS_SECRET", "aws s3 cp a s3://b/c",
               "echo \"machine $HOST login $USER password $PASS\" > ~/.netrc",
               "printf 'machine %s login %s password %s\\n' \"$H\" \"$U\" \"$P\" > ~/.netrc",
               "echo 'login failed: password incorrect'", "# the default password policy",
               "docker login --username bob --password-stdin < pw.txt"});
}

// Passwords given as -p: glued to mysql's flag, or on a registry login line; and names that say
// "pass" or end in "pw".
TEST(Redact, ShortPasswordFlagsAndPassNames) {
  expect_one_secret_each({
      {"mysql -pHunter2pw -u root db", "mysql -p<SECRET> -u root db"},
      {"mysqldump -h h -p'my pw' db > x.sql", "mysqldump -h h -p'<SECRET>' db > x.sql"},
      {"mariadb -p\"Hunter2pw\" db", "mariadb -p\"<SECRET>\" db"},
      {"echo x | docker login -u bob -p Hunter2pw registry.io", "echo x | docker login -u bob -p <SECRET> registry.io"},
      {"podman login --username bob -p=Hunter2pw quay.io", "podman login --username bob -p=<SECRET> quay.io"},
      {"export DB_PASS=Hunter2pw", "export DB_PASS=<SECRET>"},
      {"SMTP_PASS='abc def'", "SMTP_PASS='<SECRET>'"},
      {"DB_PW=Hunter2pw", "DB_PW=<SECRET>"},
  });
  // mysql -p alone prompts (the next word is the database); -p elsewhere is not a password; a
  // reference or a port stays; BYPASS is one word.
  expect_kept({"mysql -p mydb", "mkdir -p out && cp a b", "mkdir -pv out",
               "docker login -u bob -p $REGISTRY_PW reg.io", "ssh login01 -p 2222", "mysql -p$DB_PW db",
               "export BYPASS=1", "tar -cpf a.tar dir", "rsync -p a b"});
}

// csh and tcsh (PBS and SGE scripts under #!/bin/csh) set the environment with `setenv NAME
// VALUE`: no `=`, so the assignment rule never saw the value.
TEST(Redact, CshSetenvUnderASecretName) {
  expect_one_secret_each({
      {"setenv HF_TOKEN abcdef123456", "setenv HF_TOKEN <SECRET>"},
      {"setenv AWS_SECRET_ACCESS_KEY \"wJalrXUtnFEMI/K7MDENG\"", "setenv AWS_SECRET_ACCESS_KEY \"<SECRET>\""},
      {"if (! $?DB_PASSWORD) setenv DB_PASSWORD 'hunter 2'", "if (! $?DB_PASSWORD) setenv DB_PASSWORD '<SECRET>'"},
      {"#!/bin/csh\n\tsetenv  WANDB_API_KEY 0123456789abcdef\npython x.py",
       "#!/bin/csh\n\tsetenv  WANDB_API_KEY <SECRET>\npython x.py"},
  });
  expect_kept({"setenv OMP_NUM_THREADS 16", "setenv HF_TOKEN $MY_TOKEN", "setenv HF_TOKEN \"$MY_TOKEN\"",
               "setenv HF_TOKEN `cat ~/.hf_token`", "setenv TOKENIZERS_PARALLELISM false",
               "unsetenv HF_TOKEN", "setenv HF_TOKEN", "setenv HF_HOME $SCRATCH/hf"});
}

// The shell glues a bare word to a quoted string or a `\`-escaped byte after it (`abc"def ghi"` is
// the one value `abcdef ghi`): only the bare part went, the rest survived. And a value that starts
// with a reference but goes on with a literal (`${X}literal`) was taken for a reference.
TEST(Redact, ValuesGluedToQuotesEscapesAndReferences) {
  expect_one_secret_each({
      {"export TOKEN=abc\"def ghi\"", "export TOKEN=<SECRET>"},
      {"export TOKEN=abc\\ def x", "export TOKEN=<SECRET> x"},
      {"TOKEN=abc'd e'f\"g\"; run", "TOKEN=<SECRET>; run"},
      {"DB_PASSWORD=pa\\\"ss word", "DB_PASSWORD=<SECRET> word"},
      {"setenv HF_TOKEN abc\"d e\" x", "setenv HF_TOKEN <SECRET> x"},
      {"export TOKEN=${X}literal", "export TOKEN=<SECRET>"},
      {"export API_KEY=\"${PREFIX}abc123\"", "export API_KEY=\"<SECRET>\""},
      {"x_token=$1abc123", "x_token=<SECRET>"},
      // A quote after the value that closes an echo's string (blank after it, or none on the
      // line) is not part of it.
      {"echo \"export HF_TOKEN=abc123\" >> ~/.bashrc && echo \"ok\"",
       "echo \"export HF_TOKEN=<SECRET>\" >> ~/.bashrc && echo \"ok\""},
      {"echo \"HF_TOKEN=abc123\"", "echo \"HF_TOKEN=<SECRET>\""},
      // A quoted value is one string, as before: what follows it is not read.
      {"{\"token\": \"abc123\"}", "{\"token\": \"<SECRET>\"}"},
  });
  // A reference followed by a path, punctuation, a blank or nothing is still a reference.
  expect_kept({"export TOKEN_FILE=$HOME/.token", "export HF_TOKEN=${HF_TOKEN}", "TOKEN_DIR=${SCRATCH}_tokens",
               "export HF_TOKEN=\"$X $Y\"", "echo \"export HF_TOKEN=$HF_TOKEN\" >> ~/.bashrc", "KEY_PATH=$DIR.key",
               "x_token=$1", "API_KEY=${A}:${B}", "export HF_TOKEN=$(cat f)x", "API_KEY=\"${KEY:?unset} is set\""});
}

// A docker config.json written by a heredoc or an echo: `"auth"` (base64 of user:password),
// `"identitytoken"`, `"registrytoken"` are not secret words, but under these quoted JSON keys they
// are credentials.
TEST(Redact, DockerConfigAuthInAHeredoc) {
  expect_one_secret_each({
      {"cat > ~/.docker/config.json <<EOF\n{\"auths\": {\"r.example.org\": {\"auth\": \"YWxpY2U6aHVudGVyMg==\"}}}\nEOF",
       "cat > ~/.docker/config.json <<EOF\n{\"auths\": {\"r.example.org\": {\"auth\": \"<SECRET>\"}}}\nEOF"},
      {"echo '{\"auths\":{\"ghcr.io\":{\"auth\":\"YWxpY2U6aHVudGVyMg==\"}}}' > config.json",
       "echo '{\"auths\":{\"ghcr.io\":{\"auth\":\"<SECRET>\"}}}' > config.json"},
      {"      \"identitytoken\": \"0123abcdef0123abcdef\"", "      \"identitytoken\": \"<SECRET>\""},
      {"{\"registrytoken\": \"0123abcdef0123abcdef\"}", "{\"registrytoken\": \"<SECRET>\"}"},
  });
  expect_kept({"{\"auth\": \"\"}", "{\"auth\": {\"type\": \"basic\"}}", "{\"auth\": \"$AUTH\"}", "auth: required",
               "python x.py --auth basicauth", "{\"auths\": {}}", "\"auth\": true"});
}

// Perl and PHP assign with the sigil: `my $password = "…";`, `$this->password = '…';`. (Not a
// comparison: `==`, `=~`, `=>`, or a shell test or echo with no `;` after the string; not a
// reference or a call.)
TEST(Redact, PerlAndPhpVariableAssignments) {
  expect_one_secret_each({
      {"my $password = \"Hunter2pw\";", "my $password = \"<SECRET>\";"},
      {"$db_password = 'Hunter2pw';", "$db_password = '<SECRET>';"},
      {"our $API_KEY='abc123def';", "our $API_KEY='<SECRET>';"},
      {"$this->password = \"Hunter2pw\";", "$this->password = \"<SECRET>\";"},
      {"perl -e 'my $token = \"abc123def\"; print 1'", "perl -e 'my $token = \"<SECRET>\"; print 1'"},
  });
  expect_kept({"my $password = $ENV{DB_PASSWORD};", "if [ $password == \"\" ]; then", "[ \"$TOKEN\" = \"$X\" ]",
               "my $token = get_token();", "$pass =~ s/x//;", "my %h = ($token => 'x');", "my $password = \"\";",
               "echo $HF_TOKEN = 'set'", "$TOKENIZER = 'gpt2';", "if [ $TOKEN = \"abc123def\" ]; then"});
}

// XML configuration (Maven settings.xml, Ivy, Hadoop) holds secrets as elements:
// `<password>…</password>`, under any secret element name.
TEST(Redact, XmlSecretElements) {
  expect_one_secret_each({
      {"<server><id>x</id><username>bob</username><password>Hunter2pw</password></server>",
       "<server><id>x</id><username>bob</username><password><SECRET></password></server>"},
      {"  <passphrase>my pass phrase</passphrase>", "  <passphrase><SECRET></passphrase>"},
      {"<ns:apiKey type=\"x\">abc123def</ns:apiKey>", "<ns:apiKey type=\"x\"><SECRET></ns:apiKey>"},
  });
  expect_kept({"<password>${env.MAVEN_PW}</password>", "<password></password>", "<max-tokens>2048</max-tokens>",
               "# usage: login <user> <password>", "<password>a</secret>", "<token>\nabc123def\n</token>"});
}

// A quoted password with a blank in it was redacted up to the blank: the rest survived.
TEST(Redact, QuotedCommandPasswordsAreRedactedWhole) {
  expect_one_secret_each({
      {"sshpass -p \"hunter 2 pw\" ssh host", "sshpass -p \"<SECRET>\" ssh host"},
      {"sshpass -p 'hunter 2' scp a b", "sshpass -p '<SECRET>' scp a b"},
      {"curl --user 'alice:hunter 2 pw' https://x", "curl --user '<USER>:<SECRET>' https://x"},
      {"curl -u \"alice:pa ss\" -o out https://x", "curl -u \"<USER>:<SECRET>\" -o out https://x"},
  });
  expect_kept({"sshpass -p \"$PASS\" ssh host", "sshpass -p $PASS ssh host", "curl -u \"$U:$P\" https://x"});
}

// `redis://:password@host` (Redis has no user name before 6) and `https://:token@host`: the
// credentials rule wanted a user name before the ':'.
TEST(Redact, UrlCredentialsWithAnEmptyUserName) {
  expect_one_secret_each({
      {"redis-cli -u redis://:hunter2pw@localhost:6379 ping", "redis-cli -u redis://:<SECRET>@localhost:6379 ping"},
      {"export CELERY_BROKER=rediss://:Hunter2pw@cache.example.org:6380/0",
       "export CELERY_BROKER=rediss://:<SECRET>@cache.example.org:6380/0"},
  });
  expect_kept({"redis-cli -u redis://:$REDIS_PW@localhost:6379", "wget https://example.org:8080/x"});
}

// Inside double quotes `\"` is a quote in the string, not its end: what followed it survived.
TEST(Redact, EscapedQuoteInsideADoubleQuotedSecret) {
  expect_one_secret_each({
      {"export DB_PASSWORD=\"abc\\\"def ghi\"", "export DB_PASSWORD=\"<SECRET>\""},
      {"mysql --password=\"p\\\"w 2\" db", "mysql --password=\"<SECRET>\" db"},
      {"export API_TOKEN=\"abc\\\\\" x", "export API_TOKEN=\"<SECRET>\" x"},  // `\\` then the close
  });
  expect_kept({"export API_TOKEN=\"$T\\\"\"", "export HF_TOKEN=\"\""});
}

// curl takes a short option's value glued to it: `-ualice:secret`.
TEST(Redact, CurlUserGluedToItsFlag) {
  expect_one_secret_each({
      {"curl -ualice:hunter2 https://x", "curl -u<USER>:<SECRET> https://x"},
      {"curl -s -u'alice:hunter2' https://x", "curl -s -u'<USER>:<SECRET>' https://x"},
  });
  expect_kept({"curl -u$U:$P https://x", "curl -s https://x | sort -u", "python -uc 'import a:b'"});
}

// Password flags of particular commands, whose letters mean other things elsewhere: redis-cli
// -a, openssl -k/-K, zip/unzip -P, 7z -pPW (glued), lftp -u USER,PW, smbclient -U USER%PW.
TEST(Redact, CommandPasswordFlags) {
  expect_one_secret_each({
      {"redis-cli -h cache -a Hunter2pw ping", "redis-cli -h cache -a <SECRET> ping"},
      {"redis-cli -a 'my pw' --no-auth-warning", "redis-cli -a '<SECRET>' --no-auth-warning"},
      {"openssl enc -aes-256-cbc -k Hunter2pw -in a -out b", "openssl enc -aes-256-cbc -k <SECRET> -in a -out b"},
      {"openssl enc -d -aes-256-cbc -K 00112233445566778899aabb -iv 0 -in a",
       "openssl enc -d -aes-256-cbc -K <SECRET> -iv 0 -in a"},
      {"openssl enc -aes-256-cbc -pass pass:Hunter2pw -in a", "openssl enc -aes-256-cbc -pass <SECRET> -in a"},
      {"zip -r -P Hunter2pw out.zip dir", "zip -r -P <SECRET> out.zip dir"},
      {"unzip -o -P \"my pw\" data.zip", "unzip -o -P \"<SECRET>\" data.zip"},
      {"7z a -pHunter2pw -mhe=on out.7z dir", "7z a -p<SECRET> -mhe=on out.7z dir"},
      {"/usr/bin/7za x -p'my pw' in.7z", "/usr/bin/7za x -p'<SECRET>' in.7z"},
      {"lftp -u alice,Hunter2pw sftp://host", "lftp -u <USER>,<SECRET> sftp://host"},
      {"lftp -c \"open -u alice,Hunter2pw ftp.example.org; mirror data\"",
       "lftp -c \"open -u <USER>,<SECRET> ftp.example.org; mirror data\""},
      {"smbclient //srv/share -U alice%Hunter2pw -c 'get x'", "smbclient //srv/share -U <USER>%<SECRET> -c 'get x'"},
      {"smbclient //srv/share -UCORP\\\\alice%Hunter2pw", "smbclient //srv/share -U<USER>%<SECRET>"},
      {"smbclient //srv/s --user='alice%my pw'", "smbclient //srv/s --user='<USER>%<SECRET>'"},
      {"zip -r out.zip dir \\\n  -P Hunter2pw", "zip -r out.zip dir \\\n  -P <SECRET>"},  // continued line
  });
  // References, prompts, and the same letters under other commands or before the command's name.
  expect_kept({"redis-cli -a $REDIS_PW ping", "redis-cli -a \"$(cat pw)\"", "openssl req -new -key k.pem -out r.csr",
               "openssl enc -k $PW -in a", "7z x -p data.7z", "cp x.7z y && mkdir -pv out", "tar -cpf a.7z.tar d",
               "lftp -u alice sftp://host", "lftp -u alice,$PW sftp://host", "smbclient //srv/share -U alice",
               "smbclient -U% -L srv", "smbclient //s/x -U alice%$PW", "kubectl get pods -a bob", "ssh -p 2222 host",
               "ls -a; redis-cli ping", "sort -k 2 f | redis-cli -x set k", "7z x a.7z\nmkdir -pv out"});
}

// openssl's pass-phrase arguments `env:VAR`, `file:PATH`, `fd:N` and `stdin` name where the
// pass phrase is, not the phrase: they were redacted as `-pass`'s value. `pass:PHRASE` is one,
// and a quoted one goes whole (`"pass:a b c"` kept ` b c`).
TEST(Redact, OpensslPassphraseReferencesStay) {
  expect_kept({"openssl enc -aes-256-cbc -pass env:ENC_PW -in a", "openssl enc -d -pass file:/run/pw.txt -in a",
               "openssl enc -pass fd:3 -in a", "openssl enc -pass stdin -in a", "openssl enc -pass 'env:PW' -in a",
               "openssl rsa -passin env:PW -passout file:out.pw -in k"});
  EXPECT_EQ(redact_script("openssl enc -pass file:/home/alice/pw -in a"), "openssl enc -pass file:/home/<USER>/pw -in a");
  expect_one_secret_each({
      {"openssl enc -aes-256-cbc -pass pass:Hunter2pw -in a", "openssl enc -aes-256-cbc -pass <SECRET> -in a"},
      {"openssl enc -pass envy:Hunter2pw -in a", "openssl enc -pass <SECRET> -in a"},
      {"openssl pkcs12 -passin \"pass:a b c\" -in k", "openssl pkcs12 -passin \"pass:<SECRET>\" -in k"},
  });
}

// A JSON or YAML object (or list) that starts after a secret name is no value: `"credentials": {`
// lost its `{`. The values inside it are read under their own names.
TEST(Redact, ObjectStartAfterASecretNameIsNoValue) {
  expect_kept({"{\"credentials\": {", "  \"password\": {", "credentials: {", "\"secrets\": [", "\"credentials\": {}",
               "\"credentials\": []"});
  expect_one_secret_each({
      {"\"credentials\": {\"token\": \"abc123def\"}", "\"credentials\": {\"token\": \"<SECRET>\"}"},
      {"userPassword: {SSHA}abc123def", "userPassword: <SECRET>"},
  });
}

// curl's -u / --user with a reference as the user name (`$USER:pw`) kept the password, and the
// proxy's credentials (-U / --proxy-user USER:PW) were not read at all.
TEST(Redact, CurlUserWithAReferenceAndProxyUser) {
  expect_one_secret_each({
      {"curl -u $USER:Hunter2 https://x", "curl -u <USER>:<SECRET> https://x"},
      {"curl --user ${USER}:Hunter2 https://x", "curl --user <USER>:<SECRET> https://x"},
      {"curl -u \"$USER:pa ss\" https://x", "curl -u \"<USER>:<SECRET>\" https://x"},
      {"curl -U alice:Hunter2 -x http://proxy:3128 https://x", "curl -U <USER>:<SECRET> -x http://proxy:3128 https://x"},
      {"curl --proxy-user alice:Hunter2 https://x", "curl --proxy-user <USER>:<SECRET> https://x"},
  });
  expect_kept({"curl -u $U:$P https://x", "curl -u alice: https://x", "curl -U alice -x http://p https://x",
               "curl --proxy-user \"$PU:$PP\" https://x", "sort -U a:b"});
}

// Perl, PHP and Ruby write a hash entry with a fat comma: `password => '…'`. Only a quoted value is
// read (`token => sub {…}` is code).
TEST(Redact, FatCommaSecrets) {
  expect_one_secret_each({
      {"my %h = (password => 'Hunter2pw');", "my %h = (password => '<SECRET>');"},
      {"  'password' => 'Hunter2pw',", "  'password' => '<SECRET>',"},
      {"$cfg = array(\"api_key\" => \"abc123def\");", "$cfg = array(\"api_key\" => \"<SECRET>\");"},
      {"conn(:password => \"Hunter2pw\")", "conn(:password => \"<SECRET>\")"},
  });
  expect_kept({"password => $ENV{PW},", "token => sub { 1 }", "my %h = ($token => 'x');", "password => '',",
               "password => \"$PW\"", "tokens => 'abc123def'"});
}

// A reference glued to a quoted literal (`$X"abc"`) is one shell word whose literal part is the
// secret: it was read as the reference alone, and the literal survived.
TEST(Redact, ReferenceGluedToAQuotedLiteral) {
  expect_one_secret_each({
      {"TOKEN=$X\"abc123\"", "TOKEN=<SECRET>"},
      {"export TOKEN=$PREFIX'abc123def' x", "export TOKEN=<SECRET> x"},
      {"API_KEY=${X}\"abc\"; run", "API_KEY=<SECRET>; run"},
      {"TOKEN=$X\\abc", "TOKEN=<SECRET>"},
  });
  expect_kept({"TOKEN=$X\"/path\"", "TOKEN_DIR=$X\"_x\"", "TOKEN=$X\"$Y\"", "TOKEN=$X\" is set\"",
               "echo \"export HF_TOKEN=$HF_TOKEN\" >> ~/.bashrc", "TOKEN=$X\"\""});
}

// A command's password flag is read only in that command: up to `;`, `&&`, `||`, `|` or `&`
// outside quotes. `7z x a.7z && mkdir -pv out` lost its `v`, and `ls -a x` after `redis-cli …;`
// its `x`.
TEST(Redact, CommandPasswordFlagsEndWithTheirCommand) {
  expect_kept({"7z x a.7z && mkdir -pv out", "redis-cli ping; ls -a x", "zip a.zip x | sort -k 2 -u a",
               "openssl enc -d -in a | curl -k https://x", "7z x a.7z || mkdir -pv out", "unzip a.zip & ls -P x",
               "smbclient -L srv; ls -U a%b"});
  expect_one_secret_each({
      {"7z x -pHunter2 a.7z && mkdir -pv out", "7z x -p<SECRET> a.7z && mkdir -pv out"},
      {"7z a \"x;y\" -pHunter2 z", "7z a \"x;y\" -p<SECRET> z"},
      {"7z a x\\;y -pHunter2 z", "7z a x\\;y -p<SECRET> z"},
      {"cd d && zip -P Hunter2pw a.zip x", "cd d && zip -P <SECRET> a.zip x"},
      {"zip a.zip x 2>&1 -P Hunter2pw", "zip a.zip x 2>&1 -P <SECRET>"},
      {"redis-cli -a 'a;b|c' ping; ls -a x", "redis-cli -a '<SECRET>' ping; ls -a x"},
  });
}

// A `;` or `|` inside a command substitution is not the end of the command around it: the
// password after `$(ls; echo)` was kept once commands were cut at `;`.
TEST(Redact, CommandPasswordFlagsGoOnPastACommandSubstitution) {
  expect_one_secret_each({
      {"7z a $(ls; echo) -pHunter2 x", "7z a $(ls; echo) -p<SECRET> x"},
      {"zip -r `ls | head` -P Hunter2pw out.zip", "zip -r `ls | head` -P <SECRET> out.zip"},
      {"7z a $(f $(g; h) | k) -pHunter2 x", "7z a $(f $(g; h) | k) -p<SECRET> x"},
  });
  expect_kept({"(cd d; 7z x a.7z) && mkdir -pv out", "x=$(7z l a.7z); mkdir -pv out"});
}

// A pre-signed URL carries its credential in the query: Azure SAS `sig=`, AWS SigV4
// `X-Amz-Signature` / `X-Amz-Credential` / `X-Amz-Security-Token`, SigV2 `Signature`, GCS
// `X-Goog-Signature` / `X-Goog-Credential`.
TEST(Redact, SignedUrlQueryCredentials) {
  expect_one_secret_each({
      {"wget 'https://acct.blob.core.windows.net/c/f?sv=2020-08-04&ss=b&sig=abcDEF123%2Bxyz%3D&se=x'",
       "wget 'https://acct.blob.core.windows.net/c/f?sv=2020-08-04&ss=b&sig=<SECRET>&se=x'"},
      {"azcopy copy \"https://a.blob.core.windows.net/c?sig=abcDEF123%3D\" .",
       "azcopy copy \"https://a.blob.core.windows.net/c?sig=<SECRET>\" ."},
      {"curl -o m.bin https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256\\&X-Amz-Signature=0123456789abcdef",
       "curl -o m.bin https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256\\&X-Amz-Signature=<SECRET>"},
      {"wget \"https://b.s3.amazonaws.com/k?AWSAccessKeyId=x&Expires=1700000000&Signature=abcDEF%2B123%3D\"",
       "wget \"https://b.s3.amazonaws.com/k?AWSAccessKeyId=x&Expires=1700000000&Signature=<SECRET>\""},
      {"gsutil cp 'https://storage.googleapis.com/b/o?X-Goog-Signature=0123abcd' .",
       "gsutil cp 'https://storage.googleapis.com/b/o?X-Goog-Signature=<SECRET>' ."},
  });
  // Every credential of a SigV4 URL goes, the access key id inside X-Amz-Credential with it.
  EXPECT_EQ(redact_script("curl 'https://b.s3.amazonaws.com/k?X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20240101%2F"
                          "us-east-1%2Fs3%2Faws4_request&X-Amz-Signature=0123456789abcdef&X-Amz-Security-Token=FQoG'"),
            "curl 'https://b.s3.amazonaws.com/k?X-Amz-Credential=<SECRET>&X-Amz-Signature=<SECRET>"
            "&X-Amz-Security-Token=<SECRET>'");
  expect_kept({"wget \"https://a.blob.core.windows.net/c?$SAS\"", "curl \"https://x/f?sig=$SIG\"",
               "python x.py --sig=0.5", "echo 'sig=abc'", "curl https://x/?design=abc123"});
}

// Long runs of the bytes the patterns read, up to the daemon's 1 MiB script limit: each is
// redacted (no PCRE2 "JIT stack limit" error, which made the daemon answer 500) and as the rules
// say. How long they take is measured in bench/redact_bench.cpp.
TEST(Redact, LongRunsAreRedactedAsTheRulesSay) {
  auto repeat = [](std::string_view unit, size_t bytes) {
    std::string s;
    while (s.size() < bytes) s += unit;
    return s;
  };
  const size_t mib = size_t{1} << 20;
  // (EXPECT_TRUE: a failure names the unit, not a megabyte of text)
  for (std::string_view unit : {"a.", "node01.cluster.example.org.", "x", "eyJ", "${USER}", "a:", "sk-",
                                "mailto:", "-u a:", "mod1:", "a=", "--a=", "${A:-", "${A:-\"", "${A:-x",
                                " machine a login b", " aws configure set a", " -a", "lftp -u a",
                                "smbclient -U a", "-u a,", "&sig=", "SG.a", "ya29.", " ---- BEGIN",
                                "PuTTY-User-Key-File-", "Private-", "<a", "<token>a</", "TOKEN=${",
                                "TOKEN=$X/", "TOKEN=$X\"_", "password => a", "\"credentials\": {", "curl -u $a",
                                " -pass env:a", "7z ;", "7z '", "7z -pa$(", "a&"}) {
    const std::string s = repeat(unit, mib);
    std::string r;
    ASSERT_NO_THROW(r = redact_script(s)) << unit;
    EXPECT_TRUE(r == s) << unit;  // nothing in these is a secret, an address or a user's path
  }
  const std::string work = repeat("/work/a/", mib);  // only the leading /work/GROUP is a path's
  EXPECT_TRUE(redact_script(work) == "/work/<GROUP>" + work.substr(7));
  const std::string srun = "srun -w " + repeat("node01.cluster.example.org.", 2000) + " hostname";
  EXPECT_TRUE(redact_script(srun) == srun);
  EXPECT_EQ(redact_script(std::string(500000, 'x') + "@example.com"), "<EMAIL>");
  EXPECT_EQ(redact_script("export TOKEN=" + repeat("a:", mib)), "export TOKEN=<SECRET>");
  EXPECT_EQ(redact_script(repeat("sk-", mib) + "1"), "<TOKEN>");
  // Defaults under a secret name, nested or never closed, and netrc entries are each read once.
  EXPECT_EQ(redact_script("x=" + repeat("${TOKEN:-a", mib)), "x=${TOKEN:-<SECRET>");  // never closed
  const std::string references = "x=" + repeat("${TOKEN:-", mib);  // each default a reference
  EXPECT_TRUE(redact_script(references) == references);
  const std::string nest = repeat("${TOKEN:-$", mib / 2) + "x" + std::string(mib / 20, '}');
  ASSERT_NO_THROW(redact_script(nest));
  const std::string netrc = repeat("machine a login b ", mib) + "password p4ssw0rd";
  EXPECT_TRUE(redact_script(netrc) == netrc.substr(0, netrc.size() - 8) + "<SECRET>");
  const std::string no_curl = repeat("x -u a:b ", mib);
  EXPECT_TRUE(redact_script(no_curl + "\ncurl -u al:pw https://x") ==
              no_curl.substr(0, no_curl.size() - 1) + "\ncurl -u <USER>:<SECRET> https://x");
  const std::string homes = repeat("/home/a", mib);  // a home is only among a path's first three parts
  EXPECT_TRUE(redact_script(homes) == "/home/<USER>/home/<USER>" + homes.substr(14));
}

// Secrets under names that are glued or abbreviated, and positional keys: the
// secret is gone and the hash does not change with it.
TEST(Redact, GluedAndPositionalSecretsDoNotChangeTheHash) {
  const std::vector<std::pair<std::string, std::string>> forms = {
      {"export PGPASSWORD=", "\npsql -h db -c 'select 1'"},
      {"export MYSQL_PWD=", "\nmysql -u app db < q.sql"},
      {"export SSHPASS=", "\nsshpass -e scp a host:b"},
      {"wandb login ", "\npython train.py"},
      {"wandb login --relogin ", "\npython train.py"},
      {"wandb login --host https://wandb.example.org ", "\npython train.py"},
      {"DB_PWD='", "'\nrun"},
  };
  for (const auto& [before, after] : forms) {
    const std::string a = "#!/bin/bash\n" + before + "s3cretValue0123456789abcdef" + after;
    const std::string b = "#!/bin/bash\n" + before + "0therSecret9876543210zyxwvu" + after;
    EXPECT_EQ(redact_script(a).find("s3cretValue"), std::string::npos) << redact_script(a);
    EXPECT_EQ(script_sha256(a), script_sha256(b)) << redact_script(a) << "\n" << redact_script(b);
    EXPECT_EQ(redact_script(redact_script(a)), redact_script(a));
  }
  // Not secrets: the working directory, references, a wandb login without a key.
  for (std::string s : {"cd $PWD && OLDPWD=/tmp", "PWD=/tmp/run", "export PGPASSWORD=$DB_PASS",
                        "wandb login --relogin", "wandb login $WANDB_API_KEY",
                        "wandb login --host https://wandb.example.org"}) {
    EXPECT_EQ(redact_script(s), s) << s;
  }
}

}  // namespace
}  // namespace peakcast::ingest
