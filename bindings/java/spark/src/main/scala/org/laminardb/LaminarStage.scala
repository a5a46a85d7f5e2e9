package org.laminardb

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.{SparkSession, SparkSessionExtensions}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Ascending, Attribute, AttributeReference, AttributeSet, SortOrder}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}
import org.apache.spark.sql.execution.{ColumnarToRowExec, InputAdapter, SparkPlan, SparkStrategy, UnaryExecNode, WholeStageCodegenExec}
import org.apache.spark.sql.types.StructType

/**
 * One stage of laminardb.spark.run as a node of Spark's logical plan: `stage` (a
 * [[SparkStage]]) runs over each partition of `child`, its rows are `output`. A node
 * of the plan, unlike the RDD the batch path builds, works on streaming DataFrames too:
 * each micro-batch plans it again over that batch's rows (docs/SPARK.md, "The JVM
 * engine"). `sortInput`: every task gets its partition sorted on all of the child's
 * columns, so each attempt pushes the same rows in the same order.
 */
case class LaminarStageNode(stage: SparkStage, output: Seq[Attribute], sortInput: Boolean,
    child: LogicalPlan) extends UnaryNode {
  override def producedAttributes: AttributeSet = AttributeSet(output)

  override protected def withNewChildInternal(newChild: LogicalPlan): LaminarStageNode =
    copy(child = newChild)
}

object LaminarStageNode {
  /** The node of `stage` over `child`, its output the columns of `out`. */
  def create(stage: SparkStage, out: StructType, sortInput: Boolean,
      child: LogicalPlan): LaminarStageNode = {
    val output = out.fields.toSeq.map(f => AttributeReference(f.name, f.dataType, f.nullable)())
    LaminarStageNode(stage, output, sortInput, child)
  }
}

/** The physical operator of [[LaminarStageNode]]: the stage's tasks over `child`'s rows. */
case class LaminarStageExec(stage: SparkStage, output: Seq[Attribute], sortInput: Boolean,
    child: SparkPlan) extends UnaryExecNode {
  override def producedAttributes: AttributeSet = AttributeSet(output)

  override def requiredChildOrdering: Seq[Seq[SortOrder]] =
    if (sortInput) Seq(child.output.map(a => SortOrder(a, Ascending))) else Seq(Nil)

  override protected def doExecute(): RDD[InternalRow] = {
    // SparkStage's tasks return UnsafeRows, as Spark's operators expect.
    val run = stage
    columnarChild match {
      case Some(columnar) =>
        columnar.executeColumnar().mapPartitions(b =>
          LaminarStageExec.scalaIterator(run.partitionColumns(LaminarStageExec.javaIterator(b))))
      case None =>
        child.execute().mapPartitions(rows =>
          LaminarStageExec.scalaIterator(run.partition(LaminarStageExec.javaIterator(rows))))
    }
  }

  /**
   * The columnar plan under `child` when `child` only turns its column batches into rows
   * (a Parquet scan's, say) and the stage copies columns of its types: the tasks then take
   * the batches themselves (SparkStage.partitionColumns), column by column into Arrow,
   * without Spark's rows in between. None: the stage takes `child`'s rows.
   */
  private def columnarChild: Option[SparkPlan] = {
    def strip(plan: SparkPlan): SparkPlan = plan match {
      case codegen: WholeStageCodegenExec => strip(codegen.child)
      case InputAdapter(inner) => strip(inner)
      case other => other
    }
    strip(child) match {
      case ColumnarToRowExec(columnar) if !sortInput && stage.copiesColumns() =>
        val inner = strip(columnar)
        if (inner.supportsColumnar && inner.output.map(_.exprId) == child.output.map(_.exprId)) {
          Some(inner)
        } else {
          None
        }
      case _ => None
    }
  }

  override protected def withNewChildInternal(newChild: SparkPlan): LaminarStageExec =
    copy(child = newChild)
}

object LaminarStageExec {
  // Written out rather than taken from scala.collection.JavaConverters (deprecated in
  // Scala 2.13) or scala.jdk.CollectionConverters (absent from 2.12): the same source
  // compiles for every Spark line's Scala.
  private def javaIterator[T](it: Iterator[T]): java.util.Iterator[T] =
    new java.util.Iterator[T] {
      override def hasNext: Boolean = it.hasNext
      override def next(): T = it.next()
    }

  private def scalaIterator[T](it: java.util.Iterator[T]): Iterator[T] = new Iterator[T] {
    override def hasNext: Boolean = it.hasNext
    override def next(): T = it.next()
  }
}

/** Plans [[LaminarStageNode]] as [[LaminarStageExec]]. */
object LaminarStrategy extends SparkStrategy {
  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case LaminarStageNode(stage, output, sortInput, child) =>
      LaminarStageExec(stage, output, sortInput, planLater(child)) :: Nil
    case _ => Nil
  }

  /** Add the strategy to `session`'s planner unless it is there (from LaminarExtensions). */
  def install(session: SparkSession): Unit = {
    val methods = session.experimental
    if (!methods.extraStrategies.contains(this)) {
      methods.extraStrategies = methods.extraStrategies :+ this
    }
  }
}

/** `spark.sql.extensions=org.laminardb.LaminarExtensions`: the planner strategy. */
class LaminarExtensions extends (SparkSessionExtensions => Unit) {
  override def apply(extensions: SparkSessionExtensions): Unit =
    extensions.injectPlannerStrategy(_ => LaminarStrategy)
}
