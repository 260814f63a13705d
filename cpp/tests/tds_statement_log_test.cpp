// The statement log (serve --log-statements): a line per login, batch, RPC and error, and no
// password: not LOGIN7's, not CREATE LOGIN's PASSWORD literal
// (https://learn.microsoft.com/en-us/sql/t-sql/statements/create-login-transact-sql), not
// sp_addlogin's
// (https://learn.microsoft.com/en-us/sql/relational-databases/system-stored-procedures/sp-addlogin-transact-sql).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "emu_test_util.hpp"
#include "tds/src/session.hpp"
#include "tds/src/statement_log.hpp"
#include "tds_test_util.hpp"

namespace mssqlcdc::tds {
namespace {

TEST(StatementLogMask, PasswordLiteralsAreMaskedAndOtherTextIsKept) {
  EXPECT_EQ(mask_passwords("CREATE LOGIN r WITH PASSWORD = N'p@ss''word', CHECK_POLICY = OFF"),
            "CREATE LOGIN r WITH PASSWORD = N'******', CHECK_POLICY = OFF");
  EXPECT_EQ(mask_passwords("ALTER LOGIN r WITH PASSWORD='new' OLD_PASSWORD = 'old'"),
            "ALTER LOGIN r WITH PASSWORD='******' OLD_PASSWORD = '******'");
  EXPECT_EQ(mask_passwords("CREATE LOGIN r WITH PASSWORD = 0x0200AB HASHED"),
            "CREATE LOGIN r WITH PASSWORD = ****** HASHED");
  EXPECT_EQ(mask_passwords("EXEC sp_addlogin 'bob', 'secret'; SELECT 'kept'"),
            "EXEC sp_addlogin '******', '******'; SELECT 'kept'");
  EXPECT_EQ(mask_passwords("SELECT 'password' AS x, status FROM t WHERE s = 'a'"),
            "SELECT 'password' AS x, status FROM t WHERE s = 'a'");
}

TEST(StatementLogSession, ASessionLogsItsLoginBatchAndErrorWithoutThePassword) {
  emu::test::TempFile file;
  auto engine = emu::test::orders_file(file.path());
  const std::string log_path = (file.dir() / "statements.log").string();
  {
    Session s(file.path(), "shop", 63);
    s.set_statement_log(std::make_shared<StatementLog>(log_path));
    EXPECT_FALSE(s.handle(Message{PacketType::PreLogin, prelogin_response(Encryption::Off), false}).close);
    EXPECT_FALSE(s.handle(Message{PacketType::Login7, test::login7("sa", "Login7-Secret", "shop"), false}).close);
    (void)s.handle(Message{PacketType::SqlBatch, test::sql_batch("SELECT * FROM dbo.missing_table"), false});
    (void)s.handle(
        Message{PacketType::SqlBatch, test::sql_batch("CREATE LOGIN bob WITH PASSWORD = 'Bobs-Secret'"), false});
  }
  std::ifstream in(log_path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string log = text.str();
  EXPECT_NE(log.find("spid 63 login: user sa, database shop"), std::string::npos);
  EXPECT_NE(log.find("spid 63 batch: SELECT * FROM dbo.missing_table"), std::string::npos);
  EXPECT_NE(log.find("spid 63 error 208, severity 16"), std::string::npos);
  EXPECT_NE(log.find("CREATE LOGIN bob WITH PASSWORD = '******'"), std::string::npos);
  EXPECT_EQ(log.find("Login7-Secret"), std::string::npos);
  EXPECT_EQ(log.find("Bobs-Secret"), std::string::npos);
}

TEST(StatementLogSession, AFileThatCannotBeOpenedIsAnIoError) {
  EXPECT_THROW(StatementLog("/nonexistent-folder-i36/x.log"), Error);
}

}  // namespace
}  // namespace mssqlcdc::tds
